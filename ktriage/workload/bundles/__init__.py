"""Bundles: a self-contained folder of cubins and a manifest (compile here, measure there).

``format`` is the format and its reader; ``verify`` checks cubins and signatures; ``build`` compiles an op's
kernels into one, ``merge`` adds variants and merges, ``named_kernels`` holds kernels without a workload,
``launch`` is the replay launcher over a loaded bundle, ``prune`` removes the cubins a replaced manifest no
longer references (``format.write_manifest``, which every writer calls, calls it). Above ``ops`` (a
bundle's replays are the ops'), below ``recorded`` (a recorded workload's bundle is one of these).
"""
