"""What the tiler decides for one layer: the tiling of each buffer and of the whole layer, with
its modelled cycles and L1 bytes."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["BufferTiling", "TilingSolution"]


@dataclass(frozen=True)
class BufferTiling:
    """One operand's L1 buffer: its largest tile (logical view), bytes of one copy (aligned), the
    number of copies (2 = double-buffered), and over the whole layer its DMA transfers, bytes,
    DMA engine cycles and the cycles cores spend issuing the transfers. ``held``: an input of a
    double-buffered layer kept in one copy though its tile changes (it stays from one tile to the
    next; each new tile of it is loaded after the tile before finishes, not hidden)."""

    tensor: str
    role: str
    tile_shape: tuple[int, ...]
    tile_bytes: int
    copies: int
    l1_bytes: int
    transfers: int
    moved_bytes: int
    dma_cycles: int
    issue_cycles: int
    held: bool = False


@dataclass(frozen=True)
class TilingSolution:
    """The chosen tiling of one layer and its modelled cost.

    ``tile[i]`` is the tile size of ``dims[i]`` (of ``sizes[i]``), ``tiles_per_dim[i]`` the tile
    count; ``l1_bytes`` = sum of the buffers' ``l1_bytes`` + ``scratch_bytes``. Cycles:
    ``dma_cycles`` is the DMA time not hidden by compute, ``dma_busy_cycles`` all DMA time,
    ``total_cycles`` = compute + overhead + dma. A zero-copy view has no tiles and no cost.
    ``other_buffering_cycles``: when the solver chose the buffering (``TilingParams.buffering``
    "auto"), the least cycles of a tiling with the other one that fits (None: none fits).
    """

    layer: str
    op: str
    level: str
    capacity: int
    dims: tuple[str, ...]
    sizes: tuple[int, ...]
    tile: tuple[int, ...]
    tiles_per_dim: tuple[int, ...]
    num_tiles: int
    loop_order: tuple[str, ...]
    double_buffered: bool
    buffers: tuple[BufferTiling, ...]
    scratch_bytes: int
    l1_bytes: int
    dma_cycles: int
    dma_busy_cycles: int
    compute_cycles: int
    overhead_cycles: int
    total_cycles: int
    optimal: bool = True
    zero_copy: bool = False
    solve_seconds: float = field(default=0.0, compare=False, hash=False)
    other_buffering_cycles: int | None = field(default=None, compare=False, hash=False)

    @property
    def tile_sizes(self) -> dict[str, int]:
        return dict(zip(self.dims, self.tile))

    def tile_of(self, dim: str) -> int:
        return self.tile_sizes[dim]

    def buffer(self, tensor: str, role: str | None = None) -> BufferTiling:
        for b in self.buffers:
            if b.tensor == tensor and (role is None or b.role == role):
                return b
        raise KeyError(tensor)

    def summary(self) -> str:
        if self.zero_copy:
            return f"{self.layer} ({self.op}): zero copy, nothing to tile"
        tiles = " ".join(f"{d}={t}/{s}" for d, t, s in zip(self.dims, self.tile, self.sizes) if s > 1)
        return (f"{self.layer} ({self.op}): {self.num_tiles} tiles [{tiles}] {self.l1_bytes} B "
                f"{'DB' if self.double_buffered else 'SB'}{self._held()}; cycles {self.total_cycles} = compute "
                f"{self.compute_cycles} + overhead {self.overhead_cycles} + dma {self.dma_cycles} "
                f"(busy {self.dma_busy_cycles})" + self._other_buffering())

    def _held(self) -> str:
        held = [b.tensor for b in self.buffers if b.held]
        return f" (held: {', '.join(held)})" if held else ""

    def _other_buffering(self) -> str:
        if self.other_buffering_cycles is None:
            return ""
        return f"; {'single' if self.double_buffered else 'double'}-buffered: {self.other_buffering_cycles} cycles"
