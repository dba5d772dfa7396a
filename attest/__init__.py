"""recipe-attest: attest lakehouse table versions as rocky-manifest v0.1 documents."""
__version__ = "0.1.0"
