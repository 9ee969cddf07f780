# gdb support for gradscope: pretty-printers for the tape's types and the arrays, and two helpers.
#
#   print v              a gs::Var:       Var #8 (generation 3) -> add "h" (2, 4)
#   print e              a gs::Entry:     {op = "add", label = "h", site = ..., value = (2, 4) {{..}}, ...}
#   print x              an xt::xarray / xt::xtensor: its shape and first elements, (2, 4) {{0.5, -1, ...}}
#   print p              a gs::Parameter: Parameter "w1" (4, 4) {...}, |grad| 0.31
#   gs-tape [N] [EXPR]   the tape listing (as Tape::listing() prints it), or N entries of it: those around
#                        the entry whose backward is running (marked ">"), else the last N. The tape is EXPR (a Tape, Tape*, or Var), or
#                        else the one a frame of the stack works on, or else this thread's Tape::current().
#   $gs_entry(I)         entry I of that tape, $gs_entry(v) the entry of a Var v; print shows it as above
#   set gs-elements N    how many elements an array shows (default 10)
#
# Everything is read from memory in Python (nothing is called in the program), so it works at any
# breakpoint and in a core file. The binaries carry this file in their .debug_gdb_scripts section
# (cmake/gdb.cmake); `source scripts/gdb/gradscope_gdb.py` loads it by hand. docs/debugging.md shows a
# session.
import re
import struct

import gdb


class ElementsParameter(gdb.Parameter):
    """How many elements a printed gradscope array shows before "..."."""

    set_doc = "Set how many elements a printed gradscope array (xt::xarray, xt::xtensor) shows."
    show_doc = "Show how many elements a printed gradscope array shows."

    def __init__(self):
        super().__init__("gs-elements", gdb.COMMAND_DATA, gdb.PARAM_ZUINTEGER)
        self.value = 10

    def get_show_string(self, svalue):
        return "A printed gradscope array shows its first %s elements." % svalue


# One parameter per gdb session, however often this file is loaded.
if not hasattr(gdb, "_gradscope_elements"):
    gdb._gradscope_elements = ElementsParameter()
elements = gdb._gradscope_elements

# What a printer shows for memory that does not hold a constructed object (see NotConstructed).
NOT_CONSTRUCTED = "<not yet constructed>"


# ---- reading memory ----

def _strip(val):
    """The value itself: references followed, typedefs (gs::Array) resolved."""
    if val.type.code in (gdb.TYPE_CODE_REF, gdb.TYPE_CODE_RVALUE_REF):
        val = val.referenced_value()
    return val.cast(val.type.strip_typedefs())


def _target(pointer):
    """The type a pointer points to (through typedefs such as uvector::pointer)."""
    return pointer.type.strip_typedefs().target().strip_typedefs()


class NotConstructed(Exception):
    """What a value read from memory that is not (yet, or any longer) a constructed object raises: a
    length that is negative or absurd, a null pointer with a length. At a breakpoint before a local's
    constructor has run, its memory holds whatever the stack held before."""


def _length(begin, end, limit, what):
    """end - begin for a [begin, end) pair of pointers, if it is a length a real object can have."""
    if not int(begin):
        if int(end):
            raise NotConstructed(what)
        return 0
    n = int(end - begin)
    if not 0 <= n <= limit:
        raise NotConstructed(what)
    return n


# The largest lengths a printer believes: beyond them the memory is not a constructed object.
MAX_DIMS = 32                # xtensor arrays of gradscope have at most 4 dimensions
MAX_ELEMENTS = 1 << 31       # 16 GiB of doubles: more than any run here can hold
MAX_STRING = 1 << 16         # op names, labels, scopes, parameter names, file names
MAX_LIST = 1 << 16           # an entry's inputs, tags and contributions


def _read(pointer, count):
    """count values of pointer's target type, read in one go (fast even for large arrays)."""
    target = _target(pointer)
    if count <= 0:
        return []
    if count > MAX_ELEMENTS:
        raise NotConstructed("%d elements" % count)
    raw = gdb.selected_inferior().read_memory(int(pointer), count * target.sizeof)
    if target.code == gdb.TYPE_CODE_FLT:
        fmt = {4: "f", 8: "d"}[target.sizeof]
    elif target.code == gdb.TYPE_CODE_BOOL:
        fmt = "?"
    else:
        fmt = {1: "b", 2: "h", 4: "i", 8: "q"}[target.sizeof]
        if not target.is_signed:
            fmt = fmt.upper()
    return list(struct.unpack("<%d%s" % (count, fmt), bytes(raw)))


def _string(val):
    """A std::string or a const char* as a Python str."""
    val = _strip(val)
    if val.type.code == gdb.TYPE_CODE_PTR:
        return _c_string(int(val))
    n = int(val["_M_string_length"])
    if not 0 <= n <= MAX_STRING or (n and not int(val["_M_dataplus"]["_M_p"])):
        raise NotConstructed("a string of length %d" % n)
    return val["_M_dataplus"]["_M_p"].string(length=n)


def _c_string(address):
    """The NUL-terminated string at address, read at most MAX_STRING bytes far ("" for a null pointer)."""
    if not address:
        return ""
    text = b""
    try:
        while len(text) < MAX_STRING:
            chunk = bytes(gdb.selected_inferior().read_memory(address + len(text), 64))
            if b"\0" in chunk:
                return (text + chunk[:chunk.index(b"\0")]).decode("utf-8", "replace")
            text += chunk
    except gdb.MemoryError:  # the chunk ran past readable memory: read what is left byte by byte
        try:
            while len(text) < MAX_STRING:
                byte = bytes(gdb.selected_inferior().read_memory(address + len(text), 1))
                if byte == b"\0":
                    return text.decode("utf-8", "replace")
                text += byte
        except gdb.MemoryError:
            pass
    raise NotConstructed("a char pointer 0x%x" % address)


def _vector(val):
    """The elements of a std::vector of numbers as a Python list."""
    impl = _strip(val)["_M_impl"]
    start, finish = impl["_M_start"], impl["_M_finish"]
    return _read(start, _length(start, finish, MAX_LIST, "a std::vector"))


def _tag_ids(val):
    """The ids of a std::vector<gs::EdgeTag> as a Python list: an EdgeTag is one unsigned char, its id."""
    impl = _strip(val)["_M_impl"]
    byte = gdb.lookup_type("unsigned char").pointer()
    start, finish = impl["_M_start"].cast(byte), impl["_M_finish"].cast(byte)
    return _read(start, _length(start, finish, MAX_LIST, "the edge tags"))


def _shape(array):
    """The shape of an xt::xarray (an svector m_shape) or xt::xtensor (a std::array m_shape)."""
    shape = _strip(array["m_shape"])
    if shape.type.code == gdb.TYPE_CODE_ARRAY or "_M_elems" in [f.name for f in shape.type.fields()]:
        elems = shape["_M_elems"] if shape.type.code != gdb.TYPE_CODE_ARRAY else shape
        lo, hi = elems.type.range()
        return [int(elems[i]) for i in range(lo, hi + 1)]
    begin, end = shape["m_begin"], shape["m_end"]
    return [int(x) for x in _read(begin, _length(begin, end, MAX_DIMS, "a shape"))]


def _storage(array):
    """(pointer to the first element, element count) of the array's storage. With XTENSOR_USE_XSIMD
    the storage is an xt::uvector with an aligned allocator: two pointers, p_begin and p_end."""
    storage = _strip(array["m_storage"])
    names = [f.name for f in storage.type.fields()]
    if "p_begin" in names:  # xt::uvector
        begin, end = storage["p_begin"], storage["p_end"]
    else:  # std::vector (a container declared with it)
        begin, end = storage["_M_impl"]["_M_start"], storage["_M_impl"]["_M_finish"]
    return begin, _length(begin, end, MAX_ELEMENTS, "an array's storage")


def shape_str(shape):
    """"(2, 3)", "(4,)", "()": as gs::shape_str prints a shape."""
    if len(shape) == 1:
        return "(%d,)" % shape[0]
    return "(" + ", ".join(str(n) for n in shape) + ")"


def _num(x):
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, float):
        return "%g" % x
    return str(x)


def _nested(values, shape):
    """{{1, 2}, {3, 4}}: the values row by row, as gs::to_string prints them."""
    if not shape:
        return _num(values[0])
    step = len(values) // shape[0] if shape[0] else 0
    return "{" + ", ".join(_nested(values[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])) + "}"


def array_str(array, limit=None):
    """"(2, 2) {{1, 2}, {3, 4}}", or for more than `limit` elements "(2, 3, 4) {1, 2, ... (24 elements)}"."""
    array = _strip(array)
    limit = elements.value if limit is None else limit
    shape = _shape(array)
    begin, count = _storage(array)
    size = 1
    for n in shape:
        size *= n
    if size != count:  # e.g. a local that is not constructed yet
        raise NotConstructed("shape %s, %d elements in storage" % (shape_str(shape), count))
    if count <= limit:
        values = _read(begin, count)
        body = _nested(values, shape) if values else "{}"
    else:
        values = _read(begin, limit)
        body = "{" + ", ".join(_num(v) for v in values) + ", ... (%d elements)}" % count
    return shape_str(shape) + " " + body


def array_norm(array):
    """sqrt(sum x^2), as gs::norm computes it: what listings print."""
    begin, count = _storage(_strip(array))
    return sum(float(v) * float(v) for v in _read(begin, count)) ** 0.5


def site_str(site):
    """"file.cpp:42": a std::source_location as gs::site_str prints it."""
    impl = _strip(site)["_M_impl"]
    if not int(impl):
        return "?"
    impl = impl.dereference()
    return _string(impl["_M_file_name"]).rsplit("/", 1)[-1] + ":" + str(int(impl["_M_line"]))


# ---- the tape ----

def deque_at(deque, index):
    """Element `index` of a libstdc++ std::deque, found by walking its map of fixed-size buffers."""
    impl = _strip(deque)["_M_impl"]
    start = impl["_M_start"]
    size = _target(start["_M_cur"]).sizeof
    per_buffer = 512 // size if size < 512 else 1
    offset = index + int(start["_M_cur"] - start["_M_first"])
    node = start["_M_node"] + offset // per_buffer
    return (node.dereference() + offset % per_buffer).dereference()


def tape_size(tape):
    """Tape::size(): the entries in use. reset() keeps emptied entries in the deque beyond it (0 for a
    thread_local tape not constructed yet: its memory is still zero)."""
    return int(_strip(tape)["size_"])


def tape_entries(tape):
    tape = _strip(tape)
    return [deque_at(tape["entries_"], i) for i in range(tape_size(tape))]


def _atomic(val):
    """The value inside a libstdc++ std::atomic (a pointer's is _M_b._M_p, an integer's _M_i)."""
    for path in (("_M_b", "_M_p"), ("_M_i",)):
        try:
            v = val
            for field in path:
                v = v[field]
            return v
        except gdb.error:
            pass
    raise gdb.GdbError("gradscope: cannot read a std::atomic of type %s" % val.type)


def var_tape(var):
    """The gs::Tape a gs::Var names, through its TapeSlot; None if the Var is empty or its tape is gone
    (the slot is free, or now holds a tape made after the Var: engine/tape.hpp, TapeSlot)."""
    slot = var["slot_"]
    if not int(slot):
        return None
    slot = slot.dereference()
    tape_ptr = _atomic(slot["tape"])
    if not int(tape_ptr) or int(var["generation_"]) < int(_atomic(slot["first_generation"])):
        return None
    return tape_ptr.dereference()


def _type_name(val):
    return str(_strip(val).type)


def _backward_frame():
    """The innermost frame of gs::Tape::backward on the stack (the reverse sweep is running), or None."""
    frame = gdb.selected_frame()
    while frame is not None:
        if frame.name() == "gs::Tape::backward":
            return frame
        frame = frame.older()
    return None


def find_tape(expr=None):
    """A gs::Tape value: EXPR (a Tape, Tape*, Var), else the `this` of a Tape method on the stack, else
    this thread's current tape (the thread-local pointer a TapeScope sets, else the per-thread tape)."""
    if expr:
        val = gdb.parse_and_eval(expr)
        if val.type.strip_typedefs().code == gdb.TYPE_CODE_PTR:
            val = val.dereference()
        name = _type_name(val)
        if name == "gs::Var":
            tape = var_tape(_strip(val))
            if tape is None:
                raise gdb.GdbError("gs-tape: %s is empty, or its tape has been destroyed" % expr)
            return tape
        if name != "gs::Tape":
            raise gdb.GdbError("gs-tape: %s is a %s, not a gs::Tape or gs::Var" % (expr, name))
        return _strip(val)
    frame = gdb.selected_frame()
    while frame is not None:
        try:
            this = frame.read_var("this")
            if str(_target(this).unqualified()) == "gs::Tape":
                return this.dereference()
        except (ValueError, RuntimeError, gdb.error):
            pass
        frame = frame.older()
    for name in ("'(anonymous namespace)::current_tape'", "gs::(anonymous namespace)::current_tape"):
        try:
            pointer = gdb.parse_and_eval(name)
            if int(pointer):
                return pointer.dereference()
            break
        except gdb.error:
            continue
    for name in ("'gs::Tape::current()::per_thread'", "gs::Tape::current()::per_thread"):
        try:
            return _strip(gdb.parse_and_eval(name))
        except gdb.error:
            continue
    try:  # last resort, in a running program only: call the function
        return _strip(gdb.parse_and_eval("gs::Tape::current()"))
    except gdb.error as e:
        raise gdb.GdbError("gs-tape: cannot find a tape (%s); name one: gs-tape TAPE_OR_VAR" % e)


def listing(tape, last=None):
    """Tape::listing() computed in Python from memory: the same columns, the same numbers."""
    entries = tape_entries(tape)
    marked = -1
    frame = _backward_frame()
    if frame is not None:
        try:
            if int(frame.read_var("this")) == int(tape.address):
                marked = int(frame.read_var("i"))
        except (ValueError, gdb.error):
            pass
    lines = ["%5s  %-13s %-20s %-22s %-16s %12s %12s" % ("index", "op", "label", "site", "shape", "|value|", "|grad|")]
    first, end = 0, len(entries)
    if last is not None:  # N entries: around the running one during backward, else the last N
        first = max(0, min(marked - last // 2, len(entries) - last)) if marked >= 0 else max(0, len(entries) - last)
        end = min(len(entries), first + last)
    for i in range(first, end):
        e = entries[i]
        grad = "%.6g" % array_norm(e["grad"]) if bool(e["has_grad"]) else "-"
        line = "%5d  %-13s %-20s %-22s %-16s %12.6g %12s" % (
            i, _string(e["op"]), _string(e["label"]), site_str(e["site"]), shape_str(_shape(_strip(e["value"]))),
            array_norm(e["value"]), grad)
        lines.append((">" + line[1:]) if i == marked else line)
    return "\n".join(lines)


class TapeCommand(gdb.Command):
    """Print the tape listing: gs-tape [N] [EXPR].
N: only N entries: those around the entry whose backward is running, else the last N.  EXPR: a gs::Tape, Tape* or gs::Var (default: the tape a frame on the
stack works on, else this thread's Tape::current()). A ">" marks the entry whose backward is running.
Read from memory, so it works in a core file too; if that fails, it calls the program's Tape::listing()."""

    def __init__(self):
        super().__init__("gs-tape", gdb.COMMAND_DATA, gdb.COMPLETE_EXPRESSION)

    def invoke(self, arg, from_tty):
        words = arg.split(None, 1)
        last = None
        if words and re.fullmatch(r"\d+", words[0]):
            last = int(words[0])
            words = words[1:]
        tape = find_tape(words[0] if words else None)
        try:
            text = listing(tape, last)
        except (gdb.error, gdb.MemoryError, KeyError, NotConstructed) as e:  # fall back on the program's own listing()
            try:
                text = _string(gdb.parse_and_eval("((gs::Tape*)%d)->listing()" % int(tape.address))).rstrip("\n")
            except gdb.error:
                raise gdb.GdbError("gs-tape: cannot read the tape: %s" % e)
        gdb.write(text + "\n")


class EntryFunction(gdb.Function):
    """$gs_entry(I): entry I of the current tape (as gs-tape finds it); $gs_entry(v): a gs::Var's entry."""

    def __init__(self):
        super().__init__("gs_entry")

    def invoke(self, arg):
        if _type_name(arg) == "gs::Var":
            var = _strip(arg)
            tape = var_tape(var)
            if tape is None:
                raise gdb.GdbError("$gs_entry: the Var is empty, or its tape has been destroyed")
            return deque_at(tape["entries_"], int(var["index_"]))
        tape = find_tape()
        index = int(arg)
        if not 0 <= index < tape_size(tape):
            raise gdb.GdbError("$gs_entry: %d is not on the tape (size %d)" % (index, tape_size(tape)))
        return deque_at(tape["entries_"], index)


# ---- pretty-printers ----

class ArrayPrinter:
    """xt::xarray / xt::xtensor: "(2, 4) {{0.5, -1, 2, 0}, {1.5, 0.5, -0.5, 1}}"."""

    def __init__(self, val):
        self.val = val

    def to_string(self):
        try:
            return array_str(self.val)
        except NotConstructed:
            return NOT_CONSTRUCTED
        except (gdb.error, gdb.MemoryError) as e:
            return "<xt array: %s>" % e


def _int_array(values):
    """A gdb value of type int[n], so that gdb prints the list as {1, 2, 3}."""
    int_t = gdb.lookup_type("int")
    return gdb.Value(struct.pack("<%di" % len(values), *values), int_t.array(len(values) - 1))


# gs::EdgeTag ids, named as nn/residual_edges.hpp names them (edge_tag_name): the engine gives a tag no
# meaning, nn's residual blocks give these two.
_TAGS = {0: "none", 1: "skip", 2: "branch-out"}


def _entry_fields(e):
    """(name, value) pairs of a gs::Entry; raises NotConstructed for memory that is not one."""
    names = [f.name for f in e.type.strip_typedefs().fields()]
    fields = [("op", '"%s"' % _string(e["op"])), ("label", '"%s"' % _string(e["label"]))]
    if "scope" in names and _string(e["scope"]):
        fields.append(("scope", '"%s"' % _string(e["scope"])))
    fields.append(("site", site_str(e["site"])))
    fields.append(("value", e["value"]))
    inputs = [int(i) for i in _vector(e["inputs"])]
    if inputs:
        fields.append(("inputs", _int_array(inputs)))
        tags = [_TAGS.get(int(t), "?") for t in _tag_ids(e["tags"])]
        if tags:  # what a block marked each input edge (Var::mark_input): the residual's skip and branch
            fields.append(("tags", "{" + ", ".join(tags) + "}"))
    fields.append(("requires_grad", e["requires_grad"]))
    fields.append(("has_grad", e["has_grad"]))
    if bool(e["has_grad"]):
        fields.append(("grad", e["grad"]))
        fields.append(("grad_norm", "%.6g" % array_norm(e["grad"])))
    impl = e["contributions"]["_M_impl"]
    start, finish = impl["_M_start"], impl["_M_finish"]
    count = _length(start, finish, MAX_LIST, "the contributions")
    if count:  # kept when Tape::keep_contributions is on: who sent which part of grad
        parts = []
        for i in range(count):
            c = (start + i).dereference()
            parts.append("from %d: |g| %.6g" % (int(c["from"]), array_norm(c["grad"])))
        fields.append(("contributions", "{" + ", ".join(parts) + "}"))
    if int(e["param"]["_M_ptr"]):
        fields.append(("param", '"%s"' % _string(e["param"]["_M_ptr"].dereference()["name"])))
    return fields


class EntryPrinter:
    """gs::Entry: op, label, module scope, site, value, inputs and their tags, and the gradient (with
    the contributions summed into it, when kept) once it has one."""

    def __init__(self, val):
        self.val = val
        try:
            self.fields = _entry_fields(val)
        except (NotConstructed, gdb.error, gdb.MemoryError):
            self.fields = None

    def to_string(self):
        return "gs::Entry" if self.fields is not None else NOT_CONSTRUCTED

    def children(self):
        return iter(self.fields or [])


def _entry_summary(tape, index):
    entry = deque_at(tape["entries_"], index)
    label = _string(entry["label"])
    return "%s%s %s" % (_string(entry["op"]), ' "%s"' % label if label else "", shape_str(_shape(_strip(entry["value"]))))


class VarPrinter:
    """gs::Var: "Var #8 (generation 3) -> add "h" (2, 4)": the handle, and the entry it names."""

    def __init__(self, val):
        self.val = val

    def to_string(self):
        index, generation = int(self.val["index_"]), int(self.val["generation_"])
        head = "Var #%d (generation %d)" % (index, generation)
        if not int(self.val["slot_"]):
            return "Var (empty)"
        try:
            tape = var_tape(self.val)
            if tape is None:
                return head + " -> its tape has been destroyed"
            if int(tape["generation_"]) != generation:
                return head + " -> stale: its tape has been reset (now generation %d)" % int(tape["generation_"])
            size = tape_size(tape)
            if not 0 <= index < size:
                return head + " -> not on the tape (size %d)" % size
            return head + " -> " + _entry_summary(tape, index)
        except NotConstructed:
            return head + " -> " + NOT_CONSTRUCTED
        except (gdb.error, gdb.MemoryError) as e:
            return head + " -> <unreadable: %s>" % e


def _safely(show):
    """show(), or NOT_CONSTRUCTED where the memory it reads is not a constructed object."""
    try:
        return show()
    except (NotConstructed, gdb.error, gdb.MemoryError):
        return NOT_CONSTRUCTED


def _parameter_str(state):
    s = "Parameter \"%s\" %s" % (_string(state["name"]), array_str(state["value"]))
    if _shape(_strip(state["grad"])) == _shape(_strip(state["value"])):
        s += ", |grad| %.6g" % array_norm(state["grad"])
    return s


class ParameterPrinter:
    """gs::Parameter: its name, value and gradient norm (from the shared ParameterState)."""

    def __init__(self, val):
        self.val = val

    def to_string(self):
        pointer = self.val["state_"]["_M_ptr"]
        return _safely(lambda: _parameter_str(pointer.dereference()) if int(pointer) else "Parameter (empty)")


class ParameterStatePrinter:
    def __init__(self, val):
        self.val = val

    def to_string(self):
        return _safely(lambda: _parameter_str(self.val))


class TapePrinter:
    def __init__(self, val):
        self.val = val

    def to_string(self):
        return "gs::Tape with %d entries (generation %d); gs-tape lists them" % (
            tape_size(self.val), int(self.val["generation_"]))


class SitePrinter:
    """std::source_location (gs::Site): "file.cpp:42"."""

    def __init__(self, val):
        self.val = val

    def to_string(self):
        return _safely(lambda: site_str(self.val))


_printers = [
    (re.compile(r"^xt::(xarray_container|xtensor_container)<.*>$"), ArrayPrinter),
    (re.compile(r"^gs::Entry$"), EntryPrinter),
    (re.compile(r"^gs::Var$"), VarPrinter),
    (re.compile(r"^gs::Parameter$"), ParameterPrinter),
    (re.compile(r"^gs::ParameterState$"), ParameterStatePrinter),
    (re.compile(r"^gs::Tape$"), TapePrinter),
    (re.compile(r"^std::source_location$"), SitePrinter),
]


def lookup(val):
    """The printer for a value of one of gradscope's types (typedefs like gs::Array resolved)."""
    t = val.type
    if t.code in (gdb.TYPE_CODE_REF, gdb.TYPE_CODE_RVALUE_REF):
        return None  # gdb prints the referenced value with its own printer
    name = str(t.strip_typedefs().unqualified())
    for pattern, printer in _printers:
        if pattern.match(name):
            return printer(val.cast(t.strip_typedefs()))
    return None


def register(objfile=None):
    """Adds the printers (to objfile, or everywhere) and the commands, once per gdb session."""
    target = objfile if objfile is not None else gdb
    if not any(getattr(p, "__name__", "") == "gradscope" for p in target.pretty_printers):
        lookup.__name__ = "gradscope"
        target.pretty_printers.append(lookup)
    if not getattr(gdb, "_gradscope_commands", False):
        TapeCommand()
        EntryFunction()
        gdb._gradscope_commands = True


register(gdb.current_objfile())
