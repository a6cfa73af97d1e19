"""The benchmark programs, one module each, in the order of the paper's Table 1."""
from .chase import Chase
from .everyday import CcHeaders, PyImport, Sqlite3Scan, Sqlite3Shell
from .grep import Grep
from .ld import Ld
from .contended import MatvecContended, SwapContended
from .matvec import Matvec
from .metadata_tools import Du, Find, LsLR
from .postgres import Postgres
from .refork import Refork
from .sphinx import Sphinx
from .sqlite import Sqlite
from .stencil import Stencil
from .swap import Swap
from .toolchains import Build, Ci, GitLog, GoFmt, NpmLs
from .tree_tools import (GitGrep, GoRead, PyLoader, Reader2, Restic, Rg, RgOneThread,
                         StaticReader)
from .xds import Xds

WORKLOADS = {w.name: w for w in (Grep(), Ld(), Postgres(), Xds(), Sqlite(), Chase(), Matvec(),
                                     Stencil(), Swap(), Refork(), Rg(), RgOneThread(), GitGrep(),
                                     Restic(), StaticReader(), PyLoader(), Reader2(), GoRead(),
                                     Sqlite3Shell(), Sqlite3Scan(), PyImport(), CcHeaders(),
                                     GoFmt(), NpmLs(),
                                     GitLog(), Build(), Ci(), Du(), Find(), LsLR(),
                                     Sphinx(),
                                     *(Sphinx(p) for p in (50, 75, 150, 200)), SwapContended(),
                                     MatvecContended())}
