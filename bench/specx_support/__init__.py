"""What `specx bench` and the tests both use to set a machine up around specx: memory groups
(memcg), swap space (swapspace), slowfs mounts (slowfs), busy loops (busy), the input files of
the programs in bench/programs (programs) and SIGTERM unwinding (unwind). Installed beside the
harness, which needs it at run time; the tests import it from bench/."""
