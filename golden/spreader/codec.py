"""The RTL encoding of the spreader's ports: :class:`Codec` (``layout``, ``pack``,
``unpack``), mixed into :class:`golden.spreader.model.Spreader`."""

from golden.spreader.types import (
    AllocRequest, Answer, CODE_W, Config, Done, ELEM_W, ENTITY_W, EUStatus, EU_W,
    ErrorReport, Loc, LogEntry, MAX_EUS, MoveCmd, PatchPacket, PixelPacket, ReleaseCmd,
    SEQ_W, SIZE_W, TrianglePacket, VertexPacket,
)
from golden.params import check_field


class Codec:
    """Port layouts and payload encoding; needs the model's width attributes."""

    # ================================================================ encoding
    def layout(self, port):
        """``[(field, width), ...]`` of a port's payload, first field in the low bits.

        ``port`` is one of ``i_vtx, i_tri, i_pix, i_pat, cfg, done, status, alloc,
        answer, move, release, log, err``.
        """
        I, R, C, D = self.index_bits, self.prid_bits, self.coord_bits, self.detail_bits
        SR, SE, SL = self.status_widths
        loc = [("eu", EU_W), ("entity", ENTITY_W), ("elem", ELEM_W)]
        lay = {
            "i_vtx": [("base", I), ("count", 4), ("size", SIZE_W), ("noref", 1)],
            "i_tri": [("prid", R), ("i0", I), ("i1", I), ("i2", I), ("size", SIZE_W),
                      ("last", 3)],
            "i_pix": [("prid", R), ("x", C), ("y", C), ("mask", 16), ("last", 1),
                      ("size", SIZE_W)],
            "i_pat": [("base", I), ("size", SIZE_W), ("noref", 1)],
            "cfg": [("op", 2), ("etype", 2), ("count", 5), ("eus", 4 * MAX_EUS),
                    ("records", SR), ("lines", SL), ("limit", 8)],
            "done": [("eu", EU_W), ("entity", ENTITY_W)],
            "status": [("free_records", SR), ("free_entities", SE), ("free_lines", SL)],
            "alloc": [("etype", 2), ("lines", SIZE_W), ("hold", 1), ("seq", SEQ_W)],
            "answer": [("accept", 1), ("entity", ENTITY_W)],
            "move": [("eu", EU_W), ("entity", ENTITY_W), ("etype", 2), ("seq", SEQ_W),
                     ("size", SIZE_W), ("ref", 2), ("index", D), ("count", 5)]
                    + [(f"src{i}_{n}", w) for i in range(3) for n, w in loc]
                    + [("x", C), ("y", C), ("mask", 16)],
            "release": [("eu", EU_W), ("entity", ENTITY_W), ("etype", 2), ("rec", 8)],
            "log": [("kind", 2), ("etype", 2), ("seq", SEQ_W), ("eu", EU_W),
                    ("entity", ENTITY_W), ("ref", 2), ("passes", 8), ("refused", MAX_EUS),
                    ("code", CODE_W)],
            "err": [("code", CODE_W), ("src", 3), ("seq", SEQ_W), ("eu", EU_W), ("detail", D)],
        }
        if port not in lay:
            raise ValueError(f"port must be one of {', '.join(lay)}, not {port!r}")
        return lay[port]

    @staticmethod
    def fields(port, obj):
        """``{field: int}`` of a payload record for ``port`` (the layout's names)."""
        if port == "i_tri":
            d = dict(prid=obj.prid, i0=obj.indices[0], i1=obj.indices[1], i2=obj.indices[2],
                     size=obj.size, last=obj.last)
        elif port == "cfg":
            d = dict(op=obj.op, etype=obj.etype, count=len(obj.eus),
                     eus=sum(e << (4 * i) for i, e in enumerate(obj.eus)),
                     records=obj.records, lines=obj.lines, limit=obj.limit)
        elif port == "move":
            d = {k: getattr(obj, k) for k in ("eu", "entity", "etype", "seq", "size", "ref",
                                              "index", "count", "x", "y", "mask")}
            for i, s in enumerate(obj.src):
                d.update({f"src{i}_eu": s.eu, f"src{i}_entity": s.entity,
                          f"src{i}_elem": s.elem})
        elif isinstance(obj, tuple) and hasattr(obj, "_asdict"):
            d = obj._asdict()
        else:
            d = {k: getattr(obj, k) for k in obj.__dataclass_fields__}
        return {k: int(v) for k, v in d.items()}

    def pack(self, port, obj):
        """The RTL encoding (an int) of a payload record for ``port``."""
        d = self.fields(port, obj)
        word, pos = 0, 0
        for name, width in self.layout(port):
            word |= check_field(f"{port}.{name}", d.get(name, 0), width) << pos
            pos += width
        return word

    def unpack(self, port, word):
        """The payload record of ``port`` encoded in ``word``."""
        d, pos = {}, 0
        for name, width in self.layout(port):
            d[name] = (int(word) >> pos) & ((1 << width) - 1)
            pos += width
        return self.record(port, d)

    @staticmethod
    def record(port, d):
        """The payload record of ``port`` with the field values ``d`` (layout names)."""
        if port == "i_vtx":
            return VertexPacket(d["base"], d["count"], d["size"], bool(d["noref"]))
        if port == "i_tri":
            return TrianglePacket(d["prid"], (d["i0"], d["i1"], d["i2"]), d["size"], d["last"])
        if port == "i_pix":
            return PixelPacket(d["prid"], d["x"], d["y"], d["mask"], bool(d["last"]), d["size"])
        if port == "i_pat":
            return PatchPacket(d["base"], d["size"], bool(d["noref"]))
        if port == "cfg":
            return Config(d["op"], d["etype"],
                          tuple((d["eus"] >> (4 * i)) & 15 for i in range(d["count"])),
                          d["records"], d["lines"], d["limit"])
        if port == "move":
            src = tuple(Loc(d.pop(f"src{i}_eu"), d.pop(f"src{i}_entity"), d.pop(f"src{i}_elem"))
                        for i in range(3))
            return MoveCmd(src=src, **d)
        if port == "answer":
            return Answer(bool(d["accept"]), d["entity"])
        cls = dict(done=Done, status=EUStatus, alloc=AllocRequest, release=ReleaseCmd,
                   log=LogEntry, err=ErrorReport)[port]
        return cls(**d)
