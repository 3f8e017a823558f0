"""Facts as data, each table naming its source (see ../shared/reference/op-precision.md)."""
