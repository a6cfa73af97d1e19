"""Deterministic source-like text for the generated trees (grep's tree, ld's C sources)."""

SYLLABLES = ("ac", "al", "ar", "ba", "buf", "cfg", "ctl", "da", "dev", "el", "en", "fs", "get",
             "hw", "id", "in", "io", "irq", "it", "ker", "len", "lo", "map", "mem", "net", "no",
             "ops", "or", "pa", "pci", "pos", "put", "q", "re", "reg", "sk", "st", "sys", "ta",
             "to", "tx", "un", "usb", "va", "vm", "wr", "xa")


def identifier(rng):
    return "_".join("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 3)))
                    for _ in range(rng.randint(1, 3)))


def source_lines(rng, count):
    """COUNT lines that look like kernel C: declarations, calls, conditions, comments."""
    shapes = (
        lambda: f"static int {identifier(rng)}(struct {identifier(rng)} *{identifier(rng)});",
        lambda: f"\tif ({identifier(rng)}->{identifier(rng)} & {rng.randint(1, 1 << 16):#x})",
        lambda: f"\t\treturn -{rng.choice(('EINVAL', 'ENOMEM', 'EIO', 'EBUSY', 'ENODEV'))};",
        lambda: (f"\t{identifier(rng)} = {identifier(rng)}({identifier(rng)}, "
                 f"{rng.randint(0, 4096)});"),
        lambda: f"/* {' '.join(identifier(rng) for _ in range(rng.randint(3, 9)))} */",
        lambda: f"#define {identifier(rng).upper()} {rng.randint(0, 1 << 20)}",
        lambda: "\t}",
        lambda: "",
    )
    return [rng.choice(shapes)() for _ in range(count)]
