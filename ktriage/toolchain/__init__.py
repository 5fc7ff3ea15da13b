"""toolchain stage of the ktriage pipeline (see DESIGN.md).

A toolchain is a Triton frontend + a ptxas + ptxas options, built once into the ktriage home:
``spec`` parses spec strings, ``manager`` builds/finds/removes toolchains (``frontend`` venvs and
``releases`` of ptxas underneath, ``installer`` wraps uv and the locking chores), and ``ptxas``
assembles PTX exactly as Triton does, lowering a too-new ``.version`` header. See docs/toolchains.md.
"""
