"""JSON numbers as the reference implementation of hash scheme v1 reads and writes them.

The reference canonicaliser (rocky-core ``canonical_json``) parses with serde_json 1.0.151 *without* the
``arbitrary_precision`` and ``float_roundtrip`` features and writes floats with the ``zmij`` formatter. So:

* a literal without fraction or exponent that fits u64 (or, negative, i64) stays an integer, written as is;
* every other literal becomes an f64 by serde_json's own fast algorithm (up to 19-20 leading significant digits
  kept in a u64, later digits dropped, then one multiplication or division by an exact power of ten per step),
  which is *not* always the correctly rounded value; ``-0`` is the float ``-0.0``; a literal whose value is
  too large for an f64 is refused ("number out of range"), one too small becomes ``0.0``;
* an f64 is written in its shortest round-trip digits: plain notation when the decimal exponent of the first
  digit is in [-5, 15] (integral values end in ``.0``), otherwise ``d[.ddd]e±X`` (``1e-7``, ``1e+30``).

docs/hash-scheme-v1.md states the rule with test vectors; tests/conformance checks it against the binary.
"""

from __future__ import annotations

import math
import re

U64_MAX = 2**64 - 1
I64_MIN = -(2**63)
_I32_MAX = 2**31 - 1
_I32_MIN = -(2**31)
# serde_json's POW10 table: the correctly rounded f64 of 10**k, k = 0..308.
_POW10 = tuple(float(f"1e{k}") for k in range(309))
_DIGITS = frozenset("0123456789")
_SHORT_INT = re.compile(r"-?(?:0|[1-9][0-9]{0,17})")
_DIGIT_RUN = re.compile(r"[0-9]*")
_ZERO_RUN = re.compile(r"0*")
# Plain notation for decimal exponents in this range (zmij's FIXED_DEC_EXP for f64), exponent form outside.
_FIXED_MIN, _FIXED_MAX = -5, 15


def is_digits(text: str) -> bool:
    """One or more ASCII digits. ``str.isdigit`` alone also accepts ``'²'`` (``int`` then raises) and ``'٣'`` (``int``
    reads 3): a version, an id, an index or a file name from untrusted input is held to ASCII before ``int``."""
    return text.isascii() and text.isdigit()


def is_signed_digits(text: str) -> bool:
    """:func:`is_digits` after at most one leading ``-`` (``'--5'.lstrip('-')`` would pass ``int``'s refusal on)."""
    return is_digits(text[1:] if text.startswith("-") else text)


class NumberOutOfRange(ValueError):
    """The literal's value does not fit an f64: the reference refuses it, so no identity exists."""


def _overflows(acc: int, digit: int, limit: int) -> bool:
    # serde_json's overflow! macro: would acc * 10 + digit exceed limit?
    return acc >= limit // 10 and (acc > limit // 10 or digit > limit % 10)


def _f64_from_parts(positive: bool, significand: int, exponent: int) -> float:
    f = float(significand)  # u64 -> f64: round to nearest, ties to even, as Rust's `as f64`
    while True:
        # i32::MIN.wrapping_abs() is negative, which never indexes the table: treat it as "beyond".
        index = abs(exponent) if exponent != _I32_MIN else len(_POW10)
        if index < len(_POW10):
            if exponent >= 0:
                f *= _POW10[index]
                if math.isinf(f):
                    raise NumberOutOfRange("number out of range")
            else:
                f /= _POW10[index]
            break
        if f == 0.0:
            break
        if exponent >= 0:
            raise NumberOutOfRange("number out of range")
        f /= 1e308
        exponent += 308
    return f if positive else -f


def _saturate_i32(value: int) -> int:
    return max(_I32_MIN, min(_I32_MAX, value))


class _Literal:
    """A cursor over one JSON number literal, mirroring serde_json's Deserializer step by step."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def skip_zeros(self) -> int:
        match = _ZERO_RUN.match(self.text, self.pos)
        count = match.end() - self.pos if match else 0
        self.pos += count
        return count

    def skip_digits(self) -> int:
        start = self.pos
        match = _DIGIT_RUN.match(self.text, start)  # a regex, not a loop: a literal may be megabytes long
        self.pos = match.end() if match else start
        return self.pos - start

    def invalid(self) -> ValueError:
        return ValueError(f"invalid number {self.text!r}")

    def digit(self) -> str:
        """The next character, consumed: a digit, or the number is invalid (the first of an integer part or an
        exponent)."""
        first = self.peek()
        if first not in _DIGITS or not first:
            raise self.invalid()
        self.pos += 1
        return first

    def parse(self) -> int | float:
        positive = True
        if self.peek() == "-":
            positive = False
            self.pos += 1
        first = self.digit()
        significand = ord(first) - 48
        if first == "0":
            if self.peek() in _DIGITS:
                raise self.invalid()  # one leading zero only
            return self.number(positive, 0)
        while self.peek() in _DIGITS:
            digit = ord(self.peek()) - 48
            if _overflows(significand, digit, U64_MAX):
                # parse_long_integer: the rest of the integer part only scales the kept digits.
                exponent = self.skip_digits()
                return self.after_integer(positive, significand, exponent)
            self.pos += 1
            significand = significand * 10 + digit
        return self.number(positive, significand)

    def after_integer(self, positive: bool, significand: int, exponent: int) -> float:
        if self.peek() == ".":
            return self.decimal(positive, significand, exponent)
        if self.peek() in ("e", "E"):
            return self.exponent(positive, significand, exponent)
        return self.finish(_f64_from_parts(positive, significand, exponent))

    def number(self, positive: bool, significand: int) -> int | float:
        if self.peek() == ".":
            return self.decimal(positive, significand, 0)
        if self.peek() in ("e", "E"):
            return self.exponent(positive, significand, 0)
        self.end()
        if positive:
            return significand
        as_i64 = significand - 2**64 if significand >= 2**63 else significand
        negated = -as_i64 if as_i64 != I64_MIN else I64_MIN  # i64::wrapping_neg
        # A negative literal that does not fit i64, and -0, become floats.
        return -float(significand) if negated >= 0 else negated

    def decimal(self, positive: bool, significand: int, before_point: int) -> float:
        self.pos += 1  # the '.'
        after_point = 0
        if significand == 0:
            after_point -= self.skip_zeros()  # 0 * 10 + 0 never overflows: leading zeros only scale
        while self.peek() in _DIGITS:
            digit = ord(self.peek()) - 48
            if _overflows(significand, digit, U64_MAX):
                # parse_decimal_overflow: the remaining fraction digits are dropped.
                self.skip_digits()
                exponent = before_point + after_point
                if self.peek() in ("e", "E"):
                    return self.exponent(positive, significand, exponent)
                return self.finish(_f64_from_parts(positive, significand, exponent))
            self.pos += 1
            significand = significand * 10 + digit
            after_point -= 1
        if after_point == 0:
            raise self.invalid()
        exponent = before_point + after_point
        if self.peek() in ("e", "E"):
            return self.exponent(positive, significand, exponent)
        return self.finish(_f64_from_parts(positive, significand, exponent))

    def exponent(self, positive: bool, significand: int, starting: int) -> float:
        self.pos += 1  # the 'e'
        positive_exp = True
        if self.peek() in ("+", "-"):
            positive_exp = self.peek() == "+"
            self.pos += 1
        exp = ord(self.digit()) - 48
        if exp == 0:
            self.skip_zeros()
        while self.peek() in _DIGITS:
            digit = ord(self.peek()) - 48
            if _overflows(exp, digit, _I32_MAX):
                self.skip_digits()
                # parse_exponent_overflow: infinity is refused, a vanishing value is a signed zero.
                if significand != 0 and positive_exp:
                    raise NumberOutOfRange("number out of range")
                return self.finish(0.0 if positive else -0.0)
            self.pos += 1
            exp = exp * 10 + digit
        final = _saturate_i32(starting + exp if positive_exp else starting - exp)
        return self.finish(_f64_from_parts(positive, significand, final))

    def finish(self, value: float) -> float:
        self.end()
        return value

    def end(self) -> None:
        if self.pos != len(self.text):
            raise self.invalid()


def reference_number(literal: str) -> int | float:
    """The value the reference reads from a JSON number literal: an int within i64/u64, else an f64.

    Raises NumberOutOfRange when the reference refuses the literal, ValueError when it is not JSON grammar.
    """
    # Fast path: a plain integer of up to 18 digits always fits i64 and is kept exactly.
    if _SHORT_INT.fullmatch(literal) and literal != "-0":
        return int(literal)
    return _Literal(literal).parse()


def reference_integer(literal: str) -> int | float:
    """reference_number for a literal already known to be of JSON's integer grammar (``-?(0|[1-9][0-9]*)``, what
    ``json``'s ``parse_int`` receives): up to 18 characters it fits i64 exactly, without the fast path's regex (one
    call per integer of a sidecar's million sizes); ``-0`` (the reference's -0.0) and longer ones as reference_number.
    """
    if len(literal) <= 18 and literal != "-0":
        return int(literal)
    return reference_number(literal)


def reference_value(value: int | float) -> int | float:
    """An in-memory number as the reference holds it: ints within i64/u64 as they are; a larger int as the f64
    the reference reads from its decimal text; a float as it is (refused when not finite)."""
    if isinstance(value, bool):
        raise TypeError("a bool is not a number")
    if isinstance(value, int):
        if I64_MIN <= value <= U64_MAX:
            return value
        return _huge_int(value)
    if not math.isfinite(value):
        raise NumberOutOfRange(f"non-finite number {value!r} has no JSON form")
    return float(value)


def _huge_int(value: int) -> float:
    magnitude = -value if value < 0 else value
    if magnitude <= U64_MAX:
        return float(value)  # a negative literal beyond i64: serde_json's -(significand as f64)
    if magnitude.bit_length() > 1100:  # beyond 1e331: infinite for any rounding, refused without arithmetic
        raise NumberOutOfRange("number out of range")
    digits = _decimal_length(magnitude)
    # serde_json keeps the leading digits while its u64 does not overflow (19 or 20 of them); the count of
    # the others becomes a power of ten.
    text = str(magnitude // 10 ** (digits - 20))
    significand = int(text[:19])
    used = 19
    if not _overflows(significand, int(text[19]), U64_MAX):
        significand = significand * 10 + int(text[19])
        used = 20
    return _f64_from_parts(value > 0, significand, digits - used)


def _decimal_length(n: int) -> int:
    """Decimal digits of a positive int, without str() (capped by Python at 4300 digits)."""
    guess = int(n.bit_length() * 0.30102999566398120) + 1
    while guess > 1 and 10 ** (guess - 1) > n:
        guess -= 1
    while 10**guess <= n:
        guess += 1
    return guess


def format_f64(value: float) -> str:
    """An f64 written as serde_json (zmij) writes it: shortest round-trip digits, plain notation for decimal
    exponents -5..15 (``100.0``, ``0.00001``), else ``1e-7`` / ``1.8446744073709552e+19``; ``-0.0`` keeps its
    sign."""
    if not math.isfinite(value):
        raise NumberOutOfRange(f"non-finite number {value!r} has no JSON form")
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0.0:
        return sign + "0.0"
    # repr() gives the shortest digit string that round-trips, the nearest when several do (as zmij).
    mantissa, _, exp_text = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    point = len(whole) if whole != "0" else -(len(fraction) - len(fraction.lstrip("0")))
    exponent = point - 1 + (int(exp_text) if exp_text else 0)  # decimal exponent of the first digit
    digits = digits.rstrip("0") or "0"
    if _FIXED_MIN <= exponent <= _FIXED_MAX:
        if len(digits) - 1 <= exponent:
            return f"{sign}{digits}{'0' * (exponent + 1 - len(digits))}.0"
        if exponent >= 0:
            return f"{sign}{digits[:exponent + 1]}.{digits[exponent + 1:]}"
        return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
    head = digits[0] + (f".{digits[1:]}" if len(digits) > 1 else "")
    return f"{sign}{head}e{'+' if exponent >= 0 else '-'}{abs(exponent)}"


def format_number(value: int | float) -> str:
    """The canonical text of a number (after reference_value)."""
    number = reference_value(value)
    return str(number) if isinstance(number, int) else format_f64(number)
