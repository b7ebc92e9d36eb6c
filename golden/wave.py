"""Golden model of the wave scheduler for merged vertex/geometry (VS|GS) shaders.

Transaction level and timing-free. A *draw* (:class:`Draw`) and, for an indexed draw,
its 32-bit indices (on the port: up to :data:`INDEX_LANES` per transfer, see
:func:`index_transfers`) go through

1. the **primitive assembler** (:func:`assemble`): the draw's primitives in Vulkan order,
   each a tuple of K vertex ids, numbered 0, 1, ... in the order they are emitted;
2. the **wave builder** (:func:`build_waves`): primitives -> :class:`Wave` records in the
   draw's mode (replicated, non-replicated, or automatic by the storage threshold);

:func:`schedule` runs a list of draws through both, with the sticky error flag and the
bad-draw rules, exactly as ``wave.scheduler`` in ``hw/wave.py`` must. :func:`execute`
runs a small merged VS|GS program on the waves of a draw (the seed's Fig. 6/7 address
formulas) and counts fibers, vertex-shader invocations and geometry-loop iterations.

Draws
-----
``topology`` takes Vulkan's codes: 0 point list, 1 line list, 2 line strip, 3 triangle
list, 4 triangle strip, 10 patch list (K = ``k`` control points, 1-32). Any other code
is unknown. ``count`` is the number of *primitives* of a non-indexed draw (vertex ids
start at ``first``) and the number of *indices* an indexed draw reads. In an indexed draw
the index :data:`RESTART` ends a strip (the next primitive starts a new strip, whose
triangle parity starts even again); list topologies drop the incomplete primitive in
front of it. Primitive ids count the primitives the draw emits, across restarts.

Index port
----------
An index transfer carries ``count`` (2 bits, 0 to 3) and three 32-bit lanes; lanes 0 to
``count - 1`` hold indices in order, the others are ignored (:func:`pack_indices`). Each
indexed draw's indices come in their own transfers (a transfer never holds indices of two
draws); a transfer may carry fewer than three (``count`` 0 carries none), so a producer
can send any split. Indices in a transfer beyond the draw's remaining ``count`` are bad
input: they are dropped and set the sticky error flag (the draw itself is unaffected).

Packing rules (spec ``wave.md``), wave size ``L``:

* **Replicated**: F = max(N, K) fibers per primitive, ⌊L/F⌋ primitives per wave; fiber
  j of a primitive shades its j-th vertex (if j < K) and emits output vertex
  ``gs_out_vert = j`` (if j < N).
* **Non-replicated**: a wave takes the next primitives while their distinct vertex ids
  (first-use order) and the primitives each fit in L fibers; fiber i shades the wave's
  i-th distinct vertex and owns its i-th primitive.
* **Automatic**: non-replicated when ``L * N * gs_size <= threshold``, else replicated.

Bad draws set the sticky error flag and are dropped whole (their indices are still
consumed, so nothing after them is lost): an unknown topology, a patch size outside 1 to
``max_k``, an unknown mode (3), N outside 1-1024, a primitive that cannot fit an empty
wave (F > L replicated, K > L non-replicated). A draw with no primitive gives no wave.

Wave records
------------
Local-memory addresses are in registers: the vertex-shader output of fiber f is at
``f * vs_size``; input j of the geometry shader of a fiber's primitive is at
``in_slot[j] * vs_size`` where ``in_slot[j]`` is ``rel_prim * F + j`` (replicated: the
seed's ``PRIM_SIZE = F * vs_size``, ``VERT_SIZE = vs_size``) or the fiber shading that
vertex in the wave (non-replicated). :func:`pack_wave` gives the record as the integer
the RTL emits (one transfer per wave); its layout is :func:`record_fields`.
"""

from dataclasses import dataclass, field

import numpy as np

from golden.params import check_int, check_pow2

__all__ = [
    "Topology", "Mode", "RESTART", "MAX_N", "Draw", "Fiber", "Wave", "Result",
    "check_wave_size", "check_max_k", "vertices_per_primitive", "draw_problem", "assemble",
    "resolve_mode", "fibers_per_primitive", "build_waves", "schedule", "pack_draw",
    "record_fields", "pack_wave", "unpack_wave", "geometry_shader", "Execution", "execute",
    "reference_outputs", "grid_mesh", "assembler_words", "Kind", "INDEX_LANES",
    "pack_indices", "index_transfers",
]

RESTART = 0xFFFF_FFFF
INDEX_LANES = 3                     # indices per transfer on the index port
MAX_N = 1024
MAX_K = 32


class Topology:
    """Vulkan primitive topology codes that the assembler knows."""
    POINT_LIST = 0
    LINE_LIST = 1
    LINE_STRIP = 2
    TRIANGLE_LIST = 3
    TRIANGLE_STRIP = 4
    PATCH_LIST = 10
    ALL = (0, 1, 2, 3, 4, 10)


class Mode:
    """Execution modes (a draw's ``mode`` field; a wave's mode is 0 or 1)."""
    REPLICATED = 0
    NON_REPLICATED = 1
    AUTOMATIC = 2


def check_wave_size(wave_size):
    """``wave_size`` (L) must be a power of two from 4 to 64."""
    check_pow2("wave_size", wave_size, 4, 64)


def check_max_k(max_k):
    """``max_k`` (the largest patch the unit takes) must be from 3 to 32."""
    check_int("max_k", max_k, 3, MAX_K)


@dataclass(frozen=True)
class Draw:
    """A draw command and its mode settings (fields as in the RTL's draw word)."""
    topology: int
    count: int
    first: int = 0
    indexed: bool = False
    k: int = 1                      # patch size; ignored by the other topologies
    mode: int = Mode.REPLICATED
    n: int = 4                      # the GS's maximum output vertex count
    vs_size: int = 4
    gs_size: int = 4
    threshold: int = 0

    def __post_init__(self):
        for name, bits in (("topology", 4), ("k", 6), ("mode", 2), ("n", 11),
                           ("vs_size", 8), ("gs_size", 8), ("first", 32), ("count", 32),
                           ("threshold", 32)):
            check_int(name, getattr(self, name), 0, (1 << bits) - 1)
        if not isinstance(self.indexed, bool):
            raise TypeError(f"indexed must be a bool, not {self.indexed!r}")


def vertices_per_primitive(draw):
    """K of a draw's topology (``None`` for an unknown one)."""
    return {Topology.POINT_LIST: 1, Topology.LINE_LIST: 2, Topology.LINE_STRIP: 2,
            Topology.TRIANGLE_LIST: 3, Topology.TRIANGLE_STRIP: 3,
            Topology.PATCH_LIST: draw.k}.get(draw.topology)


def resolve_mode(draw, wave_size):
    """The mode a draw runs in: automatic picks non-replicated when L·N·gs_size fits."""
    if draw.mode == Mode.AUTOMATIC:
        fits = wave_size * draw.n * draw.gs_size <= draw.threshold
        return Mode.NON_REPLICATED if fits else Mode.REPLICATED
    return draw.mode


def fibers_per_primitive(draw, wave_size):
    """F: max(N, K) replicated, 1 non-replicated."""
    if resolve_mode(draw, wave_size) == Mode.REPLICATED:
        return max(draw.n, vertices_per_primitive(draw))
    return 1


def draw_problem(draw, wave_size, max_k=MAX_K):
    """Why a draw is bad input (a sentence), or ``None`` when it is good."""
    if draw.topology not in Topology.ALL:
        return f"unknown topology {draw.topology}"
    k = vertices_per_primitive(draw)
    if not 1 <= k <= max_k:
        return f"patch size {k} outside 1 to {max_k}"
    if draw.mode not in (Mode.REPLICATED, Mode.NON_REPLICATED, Mode.AUTOMATIC):
        return f"unknown mode {draw.mode}"
    if not 1 <= draw.n <= MAX_N:
        return f"N = {draw.n} outside 1 to {MAX_N}"
    mode = resolve_mode(draw, wave_size)
    if mode == Mode.REPLICATED and max(draw.n, k) > wave_size:
        return f"F = {max(draw.n, k)} fibers per primitive do not fit a wave of {wave_size}"
    if mode == Mode.NON_REPLICATED and k > wave_size:
        return f"{k} vertices per primitive do not fit a wave of {wave_size}"
    return None


# ---------------------------------------------------------------- primitive assembler

def _strip_primitive(topology, window, parity):
    if topology == Topology.LINE_STRIP:
        return (window[0], window[1])
    a, b, c = window
    return (a, b, c) if parity == 0 else (a, c, b)


def assemble(draw, indices=()):
    """The primitives of a good draw: a list of K-tuples of vertex ids, in Vulkan order.

    ``indices`` are the draw's ``count`` indices (indexed draws only).
    """
    k = vertices_per_primitive(draw)
    strip = draw.topology in (Topology.LINE_STRIP, Topology.TRIANGLE_STRIP)
    if not draw.indexed:
        mask = 0xFFFF_FFFF
        if strip:
            ids = [(draw.first + i + j) & mask for i in range(draw.count) for j in range(k)]
            prims = [tuple(ids[i * k:(i + 1) * k]) for i in range(draw.count)]
            return [_strip_primitive(draw.topology, p, i & 1) for i, p in enumerate(prims)]
        return [tuple((draw.first + i * k + j) & mask for j in range(k))
                for i in range(draw.count)]
    assert len(indices) == draw.count, "an indexed draw reads exactly `count` indices"
    prims, window, made = [], [], 0       # `made`: primitives of the current strip
    for index in indices:
        index = int(index)
        if index == RESTART:
            window, made = [], 0
            continue
        window.append(index)
        if len(window) < k:
            continue
        if strip:
            prims.append(_strip_primitive(draw.topology, window, made & 1))
            made += 1
            window = window[1:]
        else:
            prims.append(tuple(window))
            window = []
    return prims


# ---------------------------------------------------------------- wave builder

@dataclass(frozen=True)
class Fiber:
    """One fiber of a wave: ``None`` marks a field with nothing assigned."""
    vertex: int | None
    prim: int | None              # primitive id within the draw
    rel_prim: int | None          # primitive index within the wave
    gs_out_vert: int | None       # replicated only: the output vertex this fiber emits
    vs_addr: int                  # local-memory address of its vertex-shader output
    in_addrs: tuple               # addresses of its primitive's K input vertices


@dataclass
class Wave:
    """A wave record: mode, geometry of the draw, and its fibers (``len(fibers) == L``)."""
    mode: int
    first_prim: int
    n_prims: int
    n_fibers: int
    k: int
    f: int
    vs_size: int
    last: bool                    # the last wave of its draw
    fibers: list
    in_slots: list                # per primitive of the wave: its K input slots

    @property
    def n_vertices(self):
        return sum(fiber.vertex is not None for fiber in self.fibers)


def _wave(draw, mode, wave_size, prim_ids, prims, in_slots, fiber_fields, last=False):
    k = vertices_per_primitive(draw)
    f = fibers_per_primitive(draw, wave_size)
    fibers = []
    for index in range(wave_size):
        vertex, rel, gs_out = fiber_fields(index)
        slots = in_slots[rel] if rel is not None else ()
        fibers.append(Fiber(
            vertex=vertex, prim=None if rel is None else prim_ids[rel], rel_prim=rel,
            gs_out_vert=gs_out, vs_addr=index * draw.vs_size,
            in_addrs=tuple(s * draw.vs_size for s in slots)))
    used = [i for i, fb in enumerate(fibers) if fb.vertex is not None or fb.prim is not None]
    return Wave(mode=mode, first_prim=prim_ids[0], n_prims=len(prims),
                n_fibers=max(used) + 1, k=k, f=f, vs_size=draw.vs_size, last=last,
                fibers=fibers, in_slots=[tuple(s) for s in in_slots])


def _replicated_waves(draw, wave_size, prims, first_id):
    k, f = vertices_per_primitive(draw), fibers_per_primitive(draw, wave_size)
    per_wave = wave_size // f
    waves = []
    for start in range(0, len(prims), per_wave):
        group = prims[start:start + per_wave]
        ids = list(range(first_id + start, first_id + start + len(group)))

        def fields(index, group=group):
            rel, j = divmod(index, f)
            if rel >= len(group):
                return None, None, None
            return (group[rel][j] if j < k else None, rel, j if j < draw.n else None)
        slots = [[rel * f + j for j in range(k)] for rel in range(len(group))]
        waves.append(_wave(draw, Mode.REPLICATED, wave_size, ids, group, slots, fields))
    return waves


def _non_replicated_waves(draw, wave_size, prims, first_id):
    waves, start = [], 0
    while start < len(prims):
        table = {}                  # the reuse table: vertex id -> slot, first-use order
        group = []
        for prim in prims[start:]:
            new = [v for v in dict.fromkeys(prim) if v not in table]
            if len(table) + len(new) > wave_size or len(group) + 1 > wave_size:
                break
            for vertex in new:
                table[vertex] = len(table)
            group.append(prim)
        ids = list(range(first_id + start, first_id + start + len(group)))
        vertices = list(table)

        def fields(index, vertices=vertices, group=group):
            vertex = vertices[index] if index < len(vertices) else None
            return vertex, index if index < len(group) else None, None
        slots = [[table[v] for v in prim] for prim in group]
        waves.append(_wave(draw, Mode.NON_REPLICATED, wave_size, ids, group, slots, fields))
        start += len(group)
    return waves


def build_waves(draw, prims, wave_size=32, first_id=0):
    """The waves of a good draw's primitives (``prims[i]`` has id ``first_id + i``)."""
    check_wave_size(wave_size)
    if resolve_mode(draw, wave_size) == Mode.REPLICATED:
        waves = _replicated_waves(draw, wave_size, prims, first_id)
    else:
        waves = _non_replicated_waves(draw, wave_size, prims, first_id)
    if waves:
        waves[-1].last = True
    return waves


@dataclass
class Result:
    """What :func:`schedule` returns: the waves of every draw, in order, and the flag."""
    waves: list = field(default_factory=list)
    error: bool = False
    problems: list = field(default_factory=list)     # (draw index, sentence)


def schedule(draws, wave_size=32, max_k=MAX_K):
    """Run ``draws`` (a list of ``(Draw, indices)``) through assembler and builder."""
    check_wave_size(wave_size)
    check_max_k(max_k)
    result = Result()
    for number, (draw, indices) in enumerate(draws):
        problem = draw_problem(draw, wave_size, max_k)
        if problem:
            result.error = True
            result.problems.append((number, problem))
            continue
        result.waves += build_waves(draw, assemble(draw, indices), wave_size)
    return result


# ---------------------------------------------------------------- bit layouts

DRAW_FIELDS = (("topology", 4), ("indexed", 1), ("mode", 2), ("k", 6), ("n", 11),
               ("vs_size", 8), ("gs_size", 8), ("first", 32), ("count", 32),
               ("threshold", 32))


def pack_draw(draw):
    """The draw command as the integer the RTL's ``draw`` port takes (LSB first)."""
    word, shift = 0, 0
    for name, bits in DRAW_FIELDS:
        word |= (int(getattr(draw, name)) & ((1 << bits) - 1)) << shift
        shift += bits
    return word


def pack_indices(indices):
    """One index transfer as the integer the RTL's ``index`` port takes: ``count`` in
    bits 0-1, lane j in bits ``2 + 32j`` (unused lanes 0)."""
    if len(indices) > INDEX_LANES:
        raise ValueError(f"a transfer carries 0 to {INDEX_LANES} indices, not {len(indices)}")
    return len(indices) | sum(int(i) << (2 + 32 * j) for j, i in enumerate(indices))


def index_transfers(indices, sizes=None):
    """A draw's indices as index transfers: full ones (three indices) by default, or
    ``sizes[t]`` indices in transfer t (cycled; sizes from 0 to 3, not all 0)."""
    if sizes is None:
        sizes = [INDEX_LANES]
    if not any(sizes):
        raise ValueError("sizes must not all be 0")
    transfers, start, t = [], 0, 0
    while start < len(indices):
        size = sizes[t % len(sizes)]
        transfers.append(pack_indices(indices[start:start + size]))
        start, t = start + size, t + 1
    return transfers


class Kind:
    """What an assembler word is (bits 0-1 of the word)."""
    DRAW = 0
    PRIM = 1
    END = 2


SETTINGS_FIELDS = (("mode", 2), ("k", 6), ("n", 11), ("vs_size", 8), ("gs_size", 8),
                   ("threshold", 32))


def assembler_words(draws, max_k=MAX_K):
    """The assembler's output words for ``draws`` (a list of ``(Draw, indices)``).

    Per good draw (topology and patch size; mode settings are the builder's to check): a
    DRAW word (``kind`` in bits 0-1, then the settings, ``k`` = vertices per primitive),
    one PRIM word per primitive (``kind``, then vertex j in bits ``2 + 32j``; vertices
    from K on are unspecified), an END word. A bad draw gives no word.
    """
    words = []
    for draw, indices in draws:
        k = vertices_per_primitive(draw)
        if k is None or not 1 <= k <= max_k:
            continue
        settings, shift = 0, 0
        for name, bits in SETTINGS_FIELDS:
            value = k if name == "k" else int(getattr(draw, name))
            settings |= (value & ((1 << bits) - 1)) << shift
            shift += bits
        words.append(Kind.DRAW | settings << 2)
        for prim in assemble(draw, indices):
            words.append(Kind.PRIM | sum(v << (32 * j) for j, v in enumerate(prim)) << 2)
        words.append(Kind.END)
    return words


def record_fields(wave_size, max_k):
    """The wave record's layout, LSB first: ``[(name, bits), ...]``.

    Header: ``last``, ``mode``, ``n_fibers``, ``n_prims``, ``k``, ``f``, ``vs_size``,
    ``first_prim``; then L fiber records (``vertex_valid``, ``vertex`` (32),
    ``prim_valid``, ``rel_prim``, ``gs_valid``, ``gs_out_vert``); then L primitive
    records of ``max_k`` input slots each (log2 L bits). Invalid fields are 0.
    """
    b = wave_size.bit_length() - 1
    fields = [("last", 1), ("mode", 1), ("n_fibers", b + 1), ("n_prims", b + 1),
              ("k", 6), ("f", b + 1), ("vs_size", 8), ("first_prim", 32)]
    for i in range(wave_size):
        fields += [(f"vertex_valid{i}", 1), (f"vertex{i}", 32), (f"prim_valid{i}", 1),
                   (f"rel_prim{i}", b), (f"gs_valid{i}", 1), (f"gs_out_vert{i}", b)]
    for r in range(wave_size):
        fields += [(f"in_slot{r}_{j}", b) for j in range(max_k)]
    return fields


def _wave_values(wave, max_k):
    values = {"last": int(wave.last), "mode": wave.mode, "n_fibers": wave.n_fibers,
              "n_prims": wave.n_prims, "k": wave.k, "f": wave.f, "vs_size": wave.vs_size,
              "first_prim": wave.first_prim}
    for i, fiber in enumerate(wave.fibers):
        values |= {f"vertex_valid{i}": int(fiber.vertex is not None),
                   f"vertex{i}": fiber.vertex or 0,
                   f"prim_valid{i}": int(fiber.prim is not None),
                   f"rel_prim{i}": fiber.rel_prim or 0,
                   f"gs_valid{i}": int(fiber.gs_out_vert is not None),
                   f"gs_out_vert{i}": fiber.gs_out_vert or 0}
    for r, slots in enumerate(wave.in_slots):
        values |= {f"in_slot{r}_{j}": s for j, s in enumerate(slots)}
    return values


def pack_wave(wave, max_k=MAX_K):
    """A wave record as the integer the RTL's ``o`` port carries."""
    values = _wave_values(wave, max_k)
    word, shift = 0, 0
    for name, bits in record_fields(len(wave.fibers), max_k):
        word |= values.get(name, 0) << shift
        shift += bits
    return word


def unpack_wave(word, wave_size, max_k=MAX_K):
    """A record integer as a ``{field: value}`` dict (for readable failure messages)."""
    values, shift = {}, 0
    for name, bits in record_fields(wave_size, max_k):
        values[name] = (word >> shift) & ((1 << bits) - 1)
        shift += bits
    return values


# ---------------------------------------------------------------- executor

def _vertex_shader(vertex_ids, vs_size):
    """A vertex shader: ``vs_size`` registers per vertex, a function of its id."""
    ids = np.asarray(vertex_ids, dtype=np.int64)[:, None]
    return (ids * 131 + np.arange(vs_size, dtype=np.int64) * 7 + 3) % 100_003


SPRITE_CORNERS = np.array([[-1, -1], [1, -1], [-1, 1], [1, 1]], dtype=np.int64)


def geometry_shader(program, inputs):
    """The GS loop of ``program`` on one primitive's input vertices: a list of outputs.

    ``point_sprite``: 1 point in, 4 vertices out (the point's registers with a corner
    offset on the first two); ``pass_through``: the K input vertices out unchanged.
    """
    if program == "point_sprite":
        out = []
        for corner in SPRITE_CORNERS:
            vertex = inputs[0].copy()
            vertex[:2] += corner
            out.append(vertex)
        return out
    if program == "pass_through":
        return [vertex.copy() for vertex in inputs]
    raise ValueError(f"program must be 'point_sprite' or 'pass_through', not {program!r}")


@dataclass
class Execution:
    """What :func:`execute` measured on one draw."""
    outputs: dict                 # (primitive id, emit index) -> tuple of registers
    fibers: int = 0               # valid fibers launched
    vs_invocations: int = 0       # fibers that shade a vertex
    gs_iterations: int = 0        # geometry-loop iterations over all fibers
    waves: int = 0


def execute(waves, program, n):
    """Run the merged VS|GS ``program`` (GS max output count ``n``) on ``waves``.

    Per wave: every fiber with a vertex runs the vertex shader and stores its output at
    its ``vs_addr`` in the wave's local memory; every fiber with a primitive loads its
    inputs from ``in_addrs`` and runs the GS loop. Replicated fibers keep the one vertex
    whose emit count equals ``gs_out_vert``; a non-replicated fiber keeps them all.
    """
    result = Execution(outputs={})
    for wave in waves:
        result.waves += 1
        vs_size = wave.vs_size
        memory = np.full(len(wave.fibers) * vs_size, -1, dtype=np.int64)
        shading = [i for i, fb in enumerate(wave.fibers) if fb.vertex is not None]
        shaded = _vertex_shader([wave.fibers[i].vertex for i in shading], vs_size)
        for i, registers in zip(shading, shaded):
            address = wave.fibers[i].vs_addr
            memory[address:address + vs_size] = registers
        result.vs_invocations += len(shading)
        result.fibers += wave.n_fibers
        for fiber in wave.fibers:
            if fiber.prim is None:
                continue
            inputs = [memory[a:a + vs_size] for a in fiber.in_addrs]
            emitted = geometry_shader(program, inputs)[:n]
            result.gs_iterations += len(emitted)
            for count, vertex in enumerate(emitted):
                if wave.mode == Mode.NON_REPLICATED or count == fiber.gs_out_vert:
                    key = (fiber.prim, count)
                    assert key not in result.outputs, f"output vertex {key} emitted twice"
                    result.outputs[key] = tuple(int(x) for x in vertex)
    return result


def reference_outputs(draw, prims, program, n, vs_size):
    """The output vertices computed straight from the primitives (no waves)."""
    outputs = {}
    for prim_id, prim in enumerate(prims):
        inputs = list(_vertex_shader(prim, vs_size))
        for count, vertex in enumerate(geometry_shader(program, inputs)[:n]):
            outputs[(prim_id, count)] = tuple(int(x) for x in vertex)
    return outputs


def grid_mesh(width, height):
    """An indexed triangle list over a ``width`` x ``height`` grid of quads, row by row
    (two triangles per quad, 6 triangles around each interior vertex)."""
    indices = []
    for y in range(height):
        for x in range(width):
            a = y * (width + 1) + x
            b, c, d = a + 1, a + width + 1, a + width + 2
            indices += [a, b, c, b, d, c]
    return indices
