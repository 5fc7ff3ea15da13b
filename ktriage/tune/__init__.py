"""`ktriage tune`: config space, compile-only screening, RBLOCK/XBLOCK scaling, fix suggestions (docs/tune.md)."""
