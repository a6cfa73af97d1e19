"""The out-of-core workloads beside a second, independent memory-hungry process in their memory
cgroup (bench/programs/hog.c: a quarter of the limit, held and touched for a second, then let
go for a second): the paper's "varying memory contention from concurrent processes" (Fraser &
Chang 2003 §6). Each variant reads its base workload's data set."""
from .matvec import Matvec
from .swap import Swap


def contended(base):
    """A workload class: BASE with a contender in its group (runner.contender)."""
    class Contended(base):
        name = f"{base.name}-contended"
        dataset = base.name
        description = f"{base.description}, beside a process taking a quarter of its memory"
        scales = {scale: dict(params, contender_mb=params["memory_limit_mb"] // 4,
                              contender_period_ms=1000)
                  for scale, params in base.scales.items()}
    return Contended


SwapContended = contended(Swap)
MatvecContended = contended(Matvec)
