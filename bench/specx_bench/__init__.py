"""specx bench: the paper's experiments (Fraser & Chang 2003, §3) on real programs over slowfs."""
