"""`ktriage toolchain ...` (placeholder: replaced by the toolchain module's owner)."""
import typer

app = typer.Typer(help="Manage compiler toolchains (Triton + ptxas).")
