#!/usr/bin/env python3
"""Generates everything that follows from the table descriptions in schema/tables.py.

  gen_schema.py --out DIR            writes into DIR:
      trace.sql                          the DDL (what Database::create runs)
      schema.md                          the reference (docs/schema.md is a copy; a test compares)
      embedded_schema.cpp                trace.sql, indexes.sql, migrations/v1.sql and the migration
                                         steps as strings, so a binary never needs the source tree
      records.thrift                     the agent link's record structs and RecordBatch
      include/fleetscope/store/enums.h   the ENUM_* tables' values as C++ enums, with their labels
      include/fleetscope/store/tables.h  row structs, the event-row list, RowVectors
      include/fleetscope/store/table_io.h          per-table insert binding and row reading, a
                                                   capture's latest row time and deletion
      include/fleetscope/store/nsys_columns.h      the nsys importer's copy of nsys-named columns
      include/fleetscope/store/table_columns.h     every table's columns as data (type, range,
                                                   Chrome-trace arg), for code that maps columns
                                                   by table (the Chrome-trace export)
      include/fleetscope/agent_link/record_encoder.h   rows -> Thrift binary (the agent)
      include/fleetscope/daemon/record_decoder.h       Thrift structs -> rows (the daemon)
      include/fleetscope/daemon/rpc_views.h            rows -> the daemon API's views of them
                                                       (rpc=; the view structs are in records.thrift)
  gen_schema.py --docs FILE          writes schema.md to FILE (scripts/schema-doc)

Only writes a file when its content changed, so the build does not recompile what did not.
"""
import argparse
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import tables as T  # noqa: E402

CPP = {"i64": "int64_t", "i32": "int32_t", "f64": "double", "str": "std::string", "bool": "bool"}
THRIFT = {"i64": "i64", "i32": "i32", "f64": "double", "str": "string"}
WIRE = {"i64": "i64", "i32": "i32", "f64": "double", "str": "str"}  # wire::Writer::*_field
# Thrift reserves `end` (a keyword of some target languages): the times travel as start_ns/end_ns.
WIRE_NAMES = {"start": "start_ns", "end": "end_ns"}
GENERATED = "Generated from schema/tables.py by schema/gen_schema.py. Do not edit."


def cpp_type(c):
    base = CPP.get(c.t, c.t)
    return f"std::optional<{base}>" if c.opt else base


def is_enum(c):
    return c.t not in CPP


def struct_tables():
    return [t for t in T.TABLES if t.struct]


def event_tables():
    return [t for t in T.TABLES if t.event]


def member_columns(t):
    return [c for c in t.columns if c.m]


def wire_columns(t):
    return sorted([c for c in t.columns if c.wire], key=lambda c: c.wire)


# ---------------------------------------------------------------------------------------------
# SQL


def ddl():
    out = ["-- " + GENERATED, "--"]
    out += [("-- " + line).rstrip() for line in T.HEADER.format(version=T.SCHEMA_VERSION).splitlines()]
    out.append("")
    for t in T.TABLES:
        out += table_ddl(t)
    return "\n".join(out) + "\n"


def table_ddl(t):
    """The CREATE TABLE of one table (and what follows it), as lines."""
    out = []
    if True:
        out.append("-- " + t.doc)
        out.append(f"CREATE TABLE IF NOT EXISTS {t.name} (")
        width = max(len(c.name) for c in t.columns)
        typew = max(len(c.sql) for c in t.columns) + 1
        items = [(f"  {c.name.ljust(width)} {c.sql}", c.doc) for c in t.columns]
        items += [(f"  {k}", None) for k in t.constraints]
        for n, (text, doc) in enumerate(items):
            comma = "," if n + 1 < len(items) else ""
            line = (text + comma).ljust(width + typew + 4)
            out.append(f"{line}-- {doc}" if doc else (text + comma))
        out.append(");")
        if t.after:
            out.append(t.after.rstrip("\n"))
        out.append("")
    return out


RANGES = "capture_row_ranges"


def ranges_fill_sql(t):
    """Recomputes table t's capture_row_ranges from its rows: the maximal runs, in rowid order, of
    rows of one capture. One pass over the table in rowid order (no sort of its rows, so memory
    does not grow with the table: Untrusted.AVersionOneFileIsMigratedWithMemoryIndependentOfItsSize):
    a row starts a run when its capture differs from the row before it, ends one when it differs
    from the row after it; each start is paired with the next end among those boundary rows. The
    migration that adds the table runs it for every event table, and
    store::recompute_capture_row_ranges for a table whose rows were copied in by plain SQL."""
    return (f"DELETE FROM {RANGES} WHERE tbl = '{t.name}';\n"
            f"INSERT INTO {RANGES}(tbl, captureId, first_rowid, last_rowid, rows)\n"
            f"  SELECT '{t.name}', c, id, last_id, last_n - n + 1 FROM (\n"
            f"    SELECT c, id, n, is_first,\n"
            f"      CASE WHEN is_last THEN id ELSE lead(id) OVER (ORDER BY id) END AS last_id,\n"
            f"      CASE WHEN is_last THEN n ELSE lead(n) OVER (ORDER BY id) END AS last_n FROM (\n"
            f"        SELECT rowid AS id, captureId AS c, row_number() OVER w AS n,\n"
            f"          (row_number() OVER w = 1 OR captureId IS NOT lag(captureId) OVER w) AS is_first,\n"
            f"          (lead(rowid) OVER w IS NULL OR captureId IS NOT lead(captureId) OVER w) AS is_last\n"
            f"        FROM {t.name} WINDOW w AS (ORDER BY rowid))\n"
            f"      WHERE is_first OR is_last)\n"
            f"  WHERE is_first AND c IS NOT NULL;\n")


def ranged_tables():
    return [t for t in T.TABLES if t.row_ranges]


def added_columns():
    """{version: [ALTER TABLE ...]} for columns with since=version."""
    steps = {}
    for t in T.TABLES:
        for c in t.columns:
            if c.since:
                steps.setdefault(c.since, []).append(
                    f"ALTER TABLE {t.name} ADD COLUMN {c.name} {c.sql};  -- {c.doc}")
    return steps


def migration_sql(path):
    """The text of a hand-written migration file, with each `.read FILE` line (the sqlite3 shell's
    include, FILE relative to migrations/) replaced by that file's text: a repair that two steps
    run (split_process_rows.sql) is written once."""
    lines = []
    for line in path.read_text().splitlines(keepends=True):
        m = re.fullmatch(r"\.read\s+(\S+)\s*", line)
        lines.append(migration_sql(HERE / "migrations" / m.group(1)) if m else line)
    return "".join(lines)


def migrations():
    """One SQL text per step from version v to v + 1, v = 1 .. SCHEMA_VERSION - 1: the hand-written
    migrations/v{v}_to_v{v+1}.sql (structural changes and repairs) followed by the generated ALTER
    TABLEs."""
    added = added_columns()
    steps = []
    for v in range(1, T.SCHEMA_VERSION):
        text = ""
        path = HERE / "migrations" / f"v{v}_to_v{v + 1}.sql"
        for t in T.TABLES:
            if t.since == v + 1:
                text += f"-- v{v} -> v{v + 1}: tables added in tables.py (since={v + 1})\n"
                text += "\n".join(table_ddl(t)) + "\n"
        if path.exists():
            text += migration_sql(path)
        if next(t for t in T.TABLES if t.name == RANGES).since == v + 1:
            text += f"-- v{v} -> v{v + 1}: {RANGES} from the rows of every event table\n"
            text += "".join(ranges_fill_sql(t) for t in ranged_tables())
        if added.get(v + 1):
            text += f"-- v{v} -> v{v + 1}: columns added in tables.py (since={v + 1})\n"
            text += "\n".join(added[v + 1]) + "\n"
        if not text:
            raise SystemExit(f"gen_schema: nothing migrates schema {v} to {v + 1}")
        steps.append(text)
    return steps


def raw_string(name, text):
    assert ")fleetscope_sql" not in text
    return f'extern const std::string {name};\nconst std::string {name} = R"fleetscope_sql({text})fleetscope_sql";\n'


def embedded_cpp(sql):
    out = [f"// {GENERATED}", "#include <string>", "#include <vector>",
           "namespace fleetscope::store::embedded {"]
    out.append(raw_string("trace_sql", sql))
    out.append(raw_string("index_sql", (HERE / "indexes.sql").read_text()))
    out.append(raw_string("v1_sql", (HERE / "migrations" / "v1.sql").read_text()))
    out.append("// Entry i upgrades schema version i + 1 to i + 2.")
    out.append("extern const std::vector<std::string> migrations;")
    out.append("const std::vector<std::string> migrations = {")
    for text in migrations():
        out.append(f'    R"fleetscope_sql({text})fleetscope_sql",')
    out.append("};")
    out.append("}  // namespace fleetscope::store::embedded")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------
# docs/schema.md


def markdown():
    out = ["# Trace database schema", "",
           "Generated from `schema/tables.py` by `schema/gen_schema.py` (`scripts/schema-doc` "
           "refreshes this copy); do not edit by hand.", "",
           f"Schema version {T.SCHEMA_VERSION}. Times are INTEGER nanoseconds (CLOCK_REALTIME base, "
           "as CUPTI). Tables in CAPITALS use the",
           "names and columns of the Nsight Systems SQLite export (plus `captureId`): their `nsys` "
           "column says which columns",
           "mirror an nsys export column. `wire` is the field id of the column in the agent link's "
           "record struct",
           "(RecordBatch in schema/fleetscope.thrift), for the tables agents send.", ""]
    for t in T.TABLES:
        out += [f"## {t.name}", "", t.doc, ""]
        if t.struct:
            out += [f"Row struct: `store::{t.struct}`." +
                    (f" Agent link: `RecordBatch` field {t.wire_batch}." if t.wire_batch else ""), ""]
        cols = "| column | type | meaning |"
        rule = "|---|---|---|"
        if t.nsys:
            cols, rule = cols + " nsys |", rule + "---|"
        if t.wire_batch:
            cols, rule = cols + " wire |", rule + "---|"
        out += [cols, rule]
        for c in t.columns:
            sql_type = re.match(r"[A-Z]+", c.sql).group(0)
            doc = c.doc.replace("|", "/")
            if c.since:
                doc += f" (since schema {c.since})"
            row = f"| `{c.name}` | {sql_type} | {doc} |"
            if t.nsys:
                row += " yes |" if c.nsys else " |"
            if t.wire_batch:
                row += f" {c.wire} |" if c.wire else " |"
            out.append(row)
        out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# C++: row structs


def tables_h():
    out = cpp_header(["The row structs of the trace store, one per table that code reads or writes, with the",
                      "column names of schema/tables.py. Included by fleetscope/store/rows.h (which defines the enums",
                      "used as member types first); include that one."],
                     ["cstddef", "cstdint", "optional", "string", "utility", "vector"], [],
                     "fleetscope::store")
    out += [f"inline constexpr int kSchemaVersion = {T.SCHEMA_VERSION};", ""]
    for t in struct_tables():
        out.append(f"// {t.struct_doc}" if t.struct_doc else f"// A row of {t.name}: {t.doc}")
        out.append(f"struct {t.struct} {{")
        for c in member_columns(t):
            init = f" = {c.default}" if c.default and not c.opt else ""
            if c.intern:
                out.append(f"  {cpp_type(c)} {c.m}{init};  // write side; {c.doc}")
                out.append(f"  int64_t {c.intern} = 0;  // read side: the StringIds id of {c.m}")
            else:
                out.append(f"  {cpp_type(c)} {c.m}{init};  // {c.doc}")
        out.append("};")
        out.append("")
    out.append("// Fills a row's write-side strings from their StringIds ids, for a row read back that is written")
    out.append("// again (e.g. into another store): `strings.string(id)` returns the text.")
    for t in struct_tables():
        interned = [c for c in member_columns(t) if c.intern and not c.read_sql]
        out.append("template <class Strings>")
        if not interned:
            out.append(f"void resolve_strings({t.struct}&, const Strings&) {{}}")
            continue
        out.append(f"void resolve_strings({t.struct}& r, const Strings& strings) {{")
        for c in interned:
            out.append(f"  r.{c.m} = strings.string(r.{c.intern});")
        out.append("}")
    out.append("")
    rows = event_tables()
    out.append("// The event tables: rows producers stream (RowSink::add), written in batches. X(Row, plural)")
    out.append("#define FLEETSCOPE_EVENT_ROWS(X) \\")
    out.append(" \\\n".join(f"  X({t.struct}, {t.plural})" for t in rows))
    out.append("")
    out.append("// One vector per event table: a batch of rows in the writer, every row a test sink saw.")
    out.append("struct RowVectors {")
    for t in rows:
        out.append(f"  std::vector<{t.struct}> {t.plural};")
    for t in rows:
        out.append(f"  void push({t.struct}&& row) {{ {t.plural}.push_back(std::move(row)); }}")
    out.append("  // Empties every vector; they keep their capacity.")
    out.append("  void clear() {")
    for t in rows:
        out.append(f"    {t.plural}.clear();")
    out.append("  }")
    out.append("  size_t size() const {")
    out.append("    return " + " + ".join(f"{t.plural}.size()" for t in rows) + ";")
    out.append("  }")
    out.append("};")
    out.append("")
    out.append("}  // namespace fleetscope::store")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------
# C++: the ENUM_* tables' values as enums


def enum_tables():
    return [t for t in T.TABLES if t.enum]


def name_function(fn, doc, t, text_of):
    """A function naming a value (the first value's name for a value not in the table)."""
    out = [f"// {doc}", f"inline const char* {fn}(int32_t value) {{", "  switch (value) {"]
    for v in t.values:
        out += [f"    case {v[0]}:", f'      return "{text_of(v)}";']
    out += ["  }", f'  return "{text_of(t.values[0])}";', "}", ""]
    return out


def enums_h():
    out = cpp_header(["The C++ enums of the ENUM_* tables: the same values, and the labels those tables hold, so a",
                      "value and its label are written once (schema/tables.py). Included by fleetscope/store/rows.h."],
                     ["cstdint"], [], "fleetscope::store")
    for t in enum_tables():
        e = t.enum
        out.append(f"// {t.cupti_enum} values ({t.name}).")
        out.append(f"enum {e.cpp} : int32_t {{")
        out += [f"  {e.prefix}{v[3]} = {v[0]}," for v in t.values]
        out.append("};")
        if e.label:
            out += name_function(e.label, f'{t.name}.label of a value, e.g. "{t.values[1][2]}".', t,
                                 lambda v: v[2])
        if e.short:
            out += name_function(e.short, f'The value\'s name without {e.prefix}, e.g. "{t.values[1][3]}".', t,
                                 lambda v: v[3])
        out.append("")
    out.append("}  // namespace fleetscope::store")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------
# C++: store insert / read


def auto_id(c):
    """An INTEGER PRIMARY KEY the database assigns: never inserted, the update's key."""
    return c.sql.startswith("INTEGER PRIMARY KEY") and c.m == "id"


def bind_expr(c):
    if c.bind:
        return c.bind
    if c.intern:
        return f"in.intern(r.{c.m})"
    if is_enum(c):
        return f"int64_t{{static_cast<int32_t>(r.{c.m})}}"
    if c.t in ("i32", "bool") and not c.opt:
        return f"int64_t{{r.{c.m}}}"
    return f"r.{c.m}"


def read_expr(t, c, i):
    if c.read:
        return c.read.replace("s.column_int(i)", f"s.column_int({i})").replace("s.column_text(i)", f"s.column_text({i})")
    if c.intern and not c.read_sql:
        return f"s.column_int({i})"
    if c.time and not c.opt:
        return f'checked_time(s, {i}, "{t.name}", "{c.name}")'
    base = CPP.get(c.t, c.t)
    if c.opt:
        return f"opt<{base}>(s, {i})"
    if c.nullable:
        return f"opt<{base}>(s, {i}).value_or({c.default or base + '{}'})"
    if c.t == "str":
        return f"s.column_text({i})"
    if c.t == "f64":
        return f"s.column_double({i})"
    if c.t == "i32":
        return f"static_cast<int32_t>(s.column_int({i}))"
    if c.t == "bool":
        return f"s.column_int({i}) != 0"
    return f"s.column_int({i})"


def table_io_sql():
    """The statements of one row's insert and of a read of every column, for code that writes or
    reads a table on a connection of its own (the daemon's tables, the GUI's and the analyzer's
    reads of them) with TableIo's column lists, so it names no column itself."""
    return ["// \"INSERT INTO <table>(<insert_columns>) VALUES (?, ...)\" (the verb: insert_verb).",
            "template <class Row>",
            "std::string insert_sql() {",
            "  std::string sql = std::string(TableIo<Row>::insert_verb) + \" INTO \" + TableIo<Row>::table + \"(\" +",
            "                    TableIo<Row>::insert_columns + \") VALUES (\";",
            "  for (int i = 0; i < TableIo<Row>::insert_count; ++i) sql += i ? \",?\" : \"?\";",
            "  return sql + \")\";",
            "}",
            "// \"SELECT <select_columns> FROM <table>\": append WHERE / ORDER BY; read each row with TableIo::read.",
            "template <class Row>",
            "std::string select_sql() {",
            "  return std::string(\"SELECT \") + TableIo<Row>::select_columns + \" FROM \" + TableIo<Row>::table;",
            "}",
            "// Every row `s` gives (a statement of select_sql<Row>(), with its WHERE / ORDER BY), read with TableIo::read.",
            "template <class Row>",
            "std::vector<Row> read_rows(Statement& s) {",
            "  std::vector<Row> rows;",
            "  while (s.step()) rows.push_back(TableIo<Row>::read(s));",
            "  return rows;",
            "}",
            "// Binds a row of a table that interns no string to parameters 1, 2, ... of insert_sql<Row>().",
            "template <class Row>",
            "void bind_row(Statement& s, const Row& r) {",
            "  struct NoStrings {} none;  // a table with a StringIds column fails to compile here",
            "  TableIo<Row>::bind(s, 1, r, none);",
            "}",
            ""]


def table_io_h():
    out = cpp_header(["Per-table insert and read code of the store (writer.cpp, reader.cpp include it): the columns",
                      "an insert names, how each is bound from a row, the columns a read selects and how a row is",
                      "filled from them. Needs Statement (database.h) and checked_time / opt (column_read.h)."],
                     ["cstdint", "string", "vector"],
                     ["fleetscope/store/column_read.h", "fleetscope/store/database.h",
                      "fleetscope/store/rows.h"],
                     "fleetscope::store::io")
    out += ["template <class Row>", "struct TableIo;", ""]
    for t in struct_tables():
        insert_cols = [c for c in t.columns if (c.t or c.bind) and not auto_id(c)]
        has_auto_id = any(auto_id(c) for c in t.columns)
        read_cols = [c for c in member_columns(t)]
        out.append("template <>")
        out.append(f"struct TableIo<{t.struct}> {{")
        out.append(f'  static constexpr const char* table = "{t.name}";')
        verb = "INSERT OR REPLACE" if t.upsert else "INSERT"
        out.append(f'  // {"Replaces the row with the same key." if t.upsert else "Appends."}')
        out.append(f'  static constexpr const char* insert_verb = "{verb}";')
        out.append(f'  static constexpr const char* insert_columns = "{", ".join(c.name for c in insert_cols)}";')
        out.append(f"  static constexpr int insert_count = {len(insert_cols)};")
        sel = []
        for c in read_cols:
            sel.append(c.read_sql or c.name)
            if c.intern and c.read_sql:
                sel.append(c.name)  # the id as well
        out.append(f'  static constexpr const char* select_columns = "{", ".join(sel)}";')
        out.append("  // Binds the row's columns to parameters p, p + 1, ...")
        out.append("  template <class Interner>")
        uses_in = any(c.intern or (c.bind and "in." in c.bind) for c in insert_cols)
        out.append(f"  static void bind(Statement& s, int p, const {t.struct}& r, Interner& {'in' if uses_in else '/*in*/'}) {{")
        for n, c in enumerate(insert_cols):
            out.append(f"    s.bind(p + {n}, {bind_expr(c)});")
        out.append("  }")
        if has_auto_id:
            out.append("  // UPDATE ... SET <these> WHERE id = ?: bind() then the id.")
            out.append(f'  static constexpr const char* update_set = "{", ".join(c.name + " = ?" for c in insert_cols)}";')
        out.append(f"  static {t.struct} read(const Statement& s) {{")
        out.append(f"    {t.struct} r;")
        i = 0
        for c in read_cols:
            if c.intern and c.read_sql:
                out.append(f"    r.{c.m} = s.column_text({i});")
                out.append(f"    r.{c.intern} = s.column_int({i + 1});")
                i += 2
                continue
            target = c.intern if c.intern else c.m
            out.append(f"    r.{target} = {read_expr(t, c, i)};")
            i += 1
        out.append("    return r;")
        out.append("  }")
        times = [c.name for c in t.columns if c.time]
        if t.event:
            out.append("  // A capture's rows are found by capture_row_ranges (store/capture_rows.h), not by captureId.")
            out.append(f"  static constexpr bool row_ranges = {'true' if t.row_ranges else 'false'};")
        if t.row_ranges:
            fill = ranges_fill_sql(t).replace("\n", " ").replace('"', '\\"')
            out.append("  // Recomputes the table's capture_row_ranges from its rows (store/capture_rows.h).")
            out.append(f'  static constexpr const char* fill_ranges_sql = "{fill.strip()}";')
        if t.event and times and any(c.name == "captureId" for c in t.columns):
            sets = ", ".join(f"{n} = {n} + ?1" for n in times)
            out.append("  // UPDATE ... SET <these>: moves rows in time by ?1 ns (RowSink::shift_times).")
            out.append(f'  static constexpr const char* shift_set = "{sets}";')
            # A row's last time: its end (its start where the end is NULL, as an NVTX mark), or
            # its only time column (a memory event's or a sample's ts).
            end = next((c for c in t.columns if c.time and c.name == "end"), None)
            last = (f"coalesce(end, {times[0]})" if end.nullable else "end") if end else times[0]
            out.append("  // A row's latest time (store/capture_rows.h: a capture's latest row time).")
            out.append(f'  static constexpr const char* last_time_expr = "{last}";')
        if t.extent:
            end = next(c for c in t.columns if c.name == "end")
            end_expr = "r.end ? *r.end : r.start" if end.opt else "r.end"
            out.append("  // The span event_extent records (overlap queries).")
            out.append(f"  static int64_t extent_end(const {t.struct}& r) {{ return {end_expr}; }}")
        out.append("};")
        out.append("")
    out += table_io_sql()
    out.append("}  // namespace fleetscope::store::io")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------
# C++: the tables as data (table_columns.h)


def sql_type(c):
    return re.match(r"[A-Z]+", c.sql).group(0)


def column_kind(c):
    """How a reader takes the column's value: by its SQL type, a StringIds id apart."""
    if c.strid:
        return "string_id"
    return {"INTEGER": "integer", "REAL": "real", "TEXT": "text"}[sql_type(c)]


def column_range(c):
    """The integer range a value must lie in before a reader narrows it: the row member's type."""
    if c.time:
        return "-kTimeLimitNs", "kTimeLimitNs"
    if column_kind(c) == "integer" and (c.t == "i32" or (c.t and is_enum(c))):
        return "INT32_MIN", "INT32_MAX"
    if c.t == "bool":
        return "0", "1"
    return "INT64_MIN", "INT64_MAX"


def chrome_role(t, c):
    if c.chrome is False or not t.chrome:
        return "Chrome::none", '""'
    if c.chrome == T.FIELD:
        return "Chrome::field", '""'
    return "Chrome::arg", '"' + (c.chrome or c.name) + '"'


def columns_symbol(t):
    return "k" + "".join(w[:1].upper() + w[1:] for w in re.split(r"[_]", t.name.lower())) + "Columns"


def table_columns_h():
    out = cpp_header(["Every table of the trace store as data: its columns in order, with the SQL type a reader",
                      "takes, the range a value must lie in before it is narrowed, and the Chrome-trace arg it",
                      "becomes. Code that maps columns by table (the Chrome-trace export) reads this instead of",
                      "naming columns by hand, so a column added in schema/tables.py reaches it without a second",
                      "edit. Included by no widely used header: including it recompiles little."],
                     ["cstdint", "span", "string_view"], [], "fleetscope::store::table_columns")
    out += ["// Times: an INTEGER within +-2^62 ns (+-146 years), so differences and sums stay in int64.",
            "inline constexpr int64_t kTimeLimitNs = int64_t{1} << 62;", "",
            "enum class Kind : uint8_t { integer, real, text, string_id /* an INTEGER StringIds id */ };",
            "// arg: an event arg named chrome_arg; field: placed by the exporter in the event itself",
            "// (ts, dur, name, cat, pid, tid); none: not exported.",
            "enum class Chrome : uint8_t { arg, field, none };", "",
            "struct Column {",
            "  std::string_view name;",
            "  Kind kind;",
            "  bool nullable;",
            "  bool time;",
            "  int64_t min, max;  // integer range (integer and string_id kinds)",
            "  Chrome chrome;",
            "  std::string_view chrome_arg;  // columns sharing one name form one array arg",
            "  std::string_view labels;      // ENUM_* table whose label the arg shows, or empty",
            "};", "",
            "struct Table {",
            "  std::string_view name;",
            "  std::span<const Column> columns;",
            "  bool chrome;  // the Chrome-trace export writes its rows",
            "  // The column called `column`, or nullptr.",
            "  constexpr const Column* find(std::string_view column) const {",
            "    for (const Column& c : columns)",
            "      if (c.name == column) return &c;",
            "    return nullptr;",
            "  }",
            "  constexpr int index(std::string_view column) const {",
            "    for (size_t i = 0; i < columns.size(); ++i)",
            "      if (columns[i].name == column) return static_cast<int>(i);",
            "    return -1;",
            "  }",
            "};", ""]
    for t in T.TABLES:
        out.append(f"inline constexpr Column {columns_symbol(t)}[] = {{")
        for c in t.columns:
            lo, hi = column_range(c)
            role, arg = chrome_role(t, c)
            labels = f'"{c.labels}"' if c.labels else '""'
            nullable = "true" if c.nullable else "false"
            time = "true" if c.time else "false"
            out.append(f'    {{"{c.name}", Kind::{column_kind(c)}, {nullable}, {time}, {lo}, {hi}, {role}, {arg}, {labels}}},')
        out.append("};")
    out.append("")
    out.append("inline constexpr Table kTables[] = {")
    for t in T.TABLES:
        out.append(f'    {{"{t.name}", {columns_symbol(t)}, {"true" if t.chrome else "false"}}},')
    out.append("};")
    out.append("")
    out.append("// The table named `name` (a compile-time constant: a misspelt name fails the build).")
    out.append("consteval const Table& table(std::string_view name) {")
    out.append("  for (const Table& t : kTables)")
    out.append("    if (t.name == name) return t;")
    out.append("  throw \"no such table in schema/tables.py\";")
    out.append("}")
    out.append("")
    out.append("}  // namespace fleetscope::store::table_columns")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------
# Agent link: IDL, encoder, decoder


def wire_tables():
    return sorted([t for t in T.TABLES if t.wire_batch], key=lambda t: t.wire_batch)


def record_name(t):
    return f"{t.struct}Record"


def wire_name(c):
    return WIRE_NAMES.get(c.m, c.m)


def wire_required(c):
    return not (c.opt or c.wire_opt)


def wire_type_of(c):
    return "i32" if is_enum(c) else c.t


def records_thrift():
    out = [f"// {GENERATED}",
           "// The agent link's record structs: the rows of one window as the store's row types",
           "// (schema/tables.py); names travel as strings and are interned by the daemon's writer. Field",
           "// ids are the `wire` ids of tables.py; ids no longer used are listed so they are never reused.",
           "namespace cpp fleetscope.rpc", ""]
    retired = {"Kernel": "10 (grid list), 11 (block list): replaced by gridX..blockZ 19-24 in schema 4",
               "RuntimeCall": "3 (bool driver): replaced by eventClass 9 in schema 4"}
    for t in wire_tables():
        if t.struct in retired:
            out.append(f"// Retired field ids: {retired[t.struct]}.")
        out.append(f"struct {record_name(t)} {{")
        for c in wire_columns(t):
            req = "required" if wire_required(c) else "optional"
            out.append(f"  {c.wire}: {req} {THRIFT[wire_type_of(c)]} {wire_name(c)},  // {c.doc}")
        out.append("}")
    out.append("")
    out.append("struct RecordBatch {")
    out.append("  1: required i64 capture_id,")
    out.append("  2: required i64 sequence,  // 0, 1, 2 ... per agent and window (duplicates are refused)")
    for t in wire_tables():
        out.append(f"  {t.wire_batch}: list<{record_name(t)}> {t.plural},")
    out.append("}")
    out += rpc_views_thrift()
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------
# The daemon's RPC views of store rows (tables.py's rpc=): structs in records.thrift, the mapping in
# fleetscope/daemon/rpc_views.h


def rpc_view_tables():
    return [t for t in struct_tables() if any(c.rpc for c in t.columns)]


def rpc_view_name(t):
    return f"{t.struct}Row"


def rpc_fields(t):
    """The view's fields in id order: (Rpc, [columns]); columns sharing a field form a list or a sum."""
    fields = {}
    for c in t.columns:
        if c.rpc:
            fields.setdefault(c.rpc.field, (c.rpc, []))[1].append(c)
    for rpc, cols in fields.values():
        for c in cols:
            if (c.rpc.name, c.rpc.required, c.rpc.sum) != (rpc.name, rpc.required, rpc.sum):
                raise SystemExit(f"gen_schema: {t.name}: rpc field {rpc.field} is described two ways")
            if not c.t:
                raise SystemExit(f"gen_schema: {t.name}.{c.name} has rpc= but no member")
        if len(cols) > 1 and not rpc.sum and any(c.opt for c in cols):
            raise SystemExit(f"gen_schema: {t.name}: list field {rpc.name} of optional members")
        if rpc.required and len(cols) == 1 and cols[0].opt:
            raise SystemExit(f"gen_schema: {t.name}: required field {rpc.name} of an optional member")
    return [fields[k] for k in sorted(fields)]


def rpc_is_text(c):
    return bool(c.intern) or c.t == "str"


def rpc_thrift_type(rpc, cols):
    base = "string" if rpc_is_text(cols[0]) else THRIFT[wire_type_of(cols[0])]
    return f"list<{base}>" if len(cols) > 1 and not rpc.sum else base


def rpc_doc(rpc, cols):
    if len(cols) == 1:
        return (f"{cols[0].name} as text" if cols[0].intern else cols[0].doc).replace("\n", " ")
    names = [c.name for c in cols]
    return " + ".join(names) if rpc.sum else "[" + ", ".join(names) + "]"


def rpc_views_thrift():
    out = ["", "// The daemon's RPC views of store rows (FleetscopeDaemon's replies, schema/fleetscope.thrift): the",
           "// columns tables.py marks rpc=, under their field ids. A public API: ids are never renumbered",
           "// or reused, new fields are optional."]
    for t in rpc_view_tables():
        out.append("")
        out.append(f"// One row of {t.name} as the daemon's API returns it (names resolved).")
        out.append(f"struct {rpc_view_name(t)} {{")
        for rpc, cols in rpc_fields(t):
            req = "required" if rpc.required else "optional"
            out.append(f"  {rpc.field}: {req} {rpc_thrift_type(rpc, cols)} {rpc.name},  // {rpc_doc(rpc, cols)}")
        out.append("}")
    return out


def rpc_value(c):
    """The row member's value as the view carries it (`name` resolves a StringIds id)."""
    if c.intern:
        return f"name(r.{c.intern})"
    return f"static_cast<int32_t>(r.{c.m})" if is_enum(c) else f"r.{c.m}"


def rpc_views_h():
    out = cpp_header(["The daemon's RPC views of store rows (records.thrift's *Row structs): which columns a view",
                      "carries and under which field, as the rpc= of schema/tables.py says. `name` resolves a",
                      "StringIds id (the read side of an interned column) to its text."],
                     ["cstddef", "cstdint", "string"], ["fleetscope/store/rows.h", "records_types.h"],
                     "fleetscope::daemon::rpc_views")
    for t in rpc_view_tables():
        view = rpc_view_name(t)
        out.append("template <class Name>")
        out.append(f"rpc::{view} rpc_view(const store::{t.struct}& r, Name&& name) {{")
        out.append(f"  rpc::{view} v;")
        for rpc, cols in rpc_fields(t):
            if rpc.sum:
                value = " + ".join(f"r.{c.m}.value_or(0)" if c.opt else f"r.{c.m}" for c in cols)
            elif len(cols) > 1:
                value = "{" + ", ".join(rpc_value(c) for c in cols) + "}"
            else:
                c = cols[0]
                if c.opt:
                    inner = f"static_cast<int32_t>(*r.{c.m})" if is_enum(c) else f"*r.{c.m}"
                    out.append(f"  if (r.{c.m}) v.__set_{rpc.name}({inner});")
                    continue
                value = rpc_value(c)
            if rpc.required:
                out.append(f"  v.{rpc.name} = {value};")
            else:
                out.append(f"  v.__set_{rpc.name}({value});")
        out.append("  return v;")
        out.append("}")
        texts = [rpc.name for rpc, cols in rpc_fields(t) if rpc_is_text(cols[0])]
        out.append("// The view's text in bytes (what a reply's size counts besides its fixed part).")
        out.append(f"inline size_t text_bytes(const rpc::{view}& v) {{")
        out.append("  return " + (" + ".join(f"v.{n}.size()" for n in texts) or "0") + ";")
        out.append("}")
        out.append("")
    out.append("}  // namespace fleetscope::daemon::rpc_views")
    return "\n".join(out) + "\n"


def cpp_header(purpose, system, local, namespace):
    """The opening of a generated header: what it is for, its includes, its namespace."""
    out = [f"// {GENERATED}"] + [f"// {line}" for line in purpose] + ["#pragma once", ""]
    out += [f"#include <{h}>" for h in system] + [""]
    out += [f'#include "{h}"' for h in local] + ["", f"namespace {namespace} {{", ""]
    return out


# ---------------------------------------------------------------------------------------------
# C++: reading an Nsight Systems SQLite export (collector/importers, nsys_importer.cpp)


def nsys_tables():
    """Tables that carry nsys's table and column names and have a row struct."""
    return [t for t in T.TABLES if t.nsys and t.struct]


def nsys_columns(t):
    """The columns an export has under the same name, copied as they are: nsys-named, with a
    member, not the capture (the importer sets it) and not read through a SELECT expression
    (NVTX text, which the importer resolves itself)."""
    return [c for c in member_columns(t) if c.nsys and c.name != "captureId" and not c.read_sql
            and not is_enum(c)]


def nsys_required(c):
    return not c.nullable and not c.nsys_opt


def nsys_read_expr(c):
    """How the importer's row reader fills the member (r: req / opt / opt_as / text; str: a
    StringIds id resolved to its text)."""
    if c.intern:
        return f'str(r, "{c.name}")'
    if c.t == "str":
        if c.opt:
            return f'r.text("{c.name}")'
        return f'r.text("{c.name}").value_or({c.default or "std::string()"})'
    if c.t == "f64":
        value = f'r.real("{c.name}")'
    elif nsys_required(c):
        return f'static_cast<int32_t>(r.req("{c.name}"))' if c.t == "i32" else f'r.req("{c.name}")'
    else:
        value = f'r.opt_as("{c.name}")' if c.t == "i32" else f'r.opt("{c.name}")'
    return value if c.opt else f"{value}.value_or({c.default or '0'})"


def nsys_columns_h():
    out = cpp_header(["How each table is read from an Nsight Systems SQLite export (`nsys export --type sqlite`):",
                      "our tables carry nsys's table and column names (tables.py), so a column nsys also exports is",
                      "copied by name with no line of its own in the importer. `required`: the importer refuses an",
                      "export without them; `optional`: read as NULL where an nsys version lacks them."],
                     ["string", "vector"], ["fleetscope/store/rows.h"], "fleetscope::store::nsys")
    out += ["template <class Row>", "struct Columns;", ""]
    for t in nsys_tables():
        cols = nsys_columns(t)
        req = ", ".join(f'"{c.name}"' for c in cols if nsys_required(c))
        opt = ", ".join(f'"{c.name}"' for c in cols if not nsys_required(c))
        out.append("template <>")
        out.append(f"struct Columns<{t.struct}> {{")
        out.append(f'  static constexpr const char* table = "{t.name}";')
        out.append(f"  static inline const std::vector<std::string> required = {{{req}}};")
        out.append(f"  static inline const std::vector<std::string> optional = {{{opt}}};")
        out.append("  // `r` reads a column of the export's row by name, `str` resolves a StringIds id to its text.")
        out.append("  template <class Reader, class Strings>")
        out.append(f"  static void read({t.struct}& row, const Reader& r, const Strings& str) {{")
        for c in cols:
            if c.intern and not nsys_required(c):  # a StringIds id the export may leave NULL
                out.append(f'    if (!r.null("{c.name}")) row.{c.m} = {nsys_read_expr(c)};')
            else:
                out.append(f"    row.{c.m} = {nsys_read_expr(c)};")
        if not any(c.intern for c in cols):
            out.append("    (void)str;")
        out.append("  }")
        out.append("};")
        out.append("")
    out += nsys_event_rows()
    out.append("}  // namespace fleetscope::store::nsys")
    return "\n".join(out) + "\n"


def nsys_event_rows():
    """The list the nsys importer's one import loop runs over: every event table an export carries."""
    rows = [t for t in nsys_tables() if t.event]
    return ["// The event tables of an nsys export, in tables.py order, for code that handles each alike",
            "// (the importer's one import loop). X(Row, plural)",
            "#define FLEETSCOPE_NSYS_EVENT_ROWS(X) \\",
            " \\\n".join(f"  X({t.struct}, {t.plural})" for t in rows), ""]


def encoder_h():
    out = cpp_header(["Store rows -> the agent link's record structs in Thrift's binary protocol (wire.h), field by",
                      "field as records.thrift declares them. The daemon decodes them with Thrift's generated code",
                      "(fleetscope/daemon/record_decoder.h); tests check every byte with it."],
                     ["cstdint"], ["fleetscope/agent_link/wire.h", "fleetscope/store/rows.h"],
                     "fleetscope::agent_link::records")
    out.append("// The RecordBatch field of each table's list; fields are numbered below kBatchFields.")
    out.append(f"inline constexpr int kBatchFields = {max(t.wire_batch for t in wire_tables()) + 1};")
    out.append("template <class Row>")
    out.append("constexpr int16_t batch_field();")
    for t in wire_tables():
        out.append(f"template <>\nconstexpr int16_t batch_field<store::{t.struct}>() {{\n  return {t.wire_batch};\n}}")
    out.append("")
    for t in wire_tables():
        out.append(f"inline void encode(wire::Writer& w, const store::{t.struct}& r) {{")
        for c in wire_columns(t):
            wt = WIRE[wire_type_of(c)]
            if c.t == "str":
                if c.opt:
                    out.append(f"  w.optional_str_field({c.wire}, r.{c.m});")
                elif c.wire_opt:  # travels only when set (an empty shortName is derived)
                    out.append(f"  if (!r.{c.m}.empty()) w.str_field({c.wire}, r.{c.m});")
                else:
                    out.append(f"  w.str_field({c.wire}, r.{c.m});")
            elif is_enum(c):
                out.append(f"  w.i32_field({c.wire}, static_cast<int32_t>(r.{c.m}));")
            else:
                out.append(f"  w.{wt}_field({c.wire}, r.{c.m});")
        out.append("  w.stop();")
        out.append("}")
        out.append("")
    out.append("}  // namespace fleetscope::agent_link::records")
    return "\n".join(out) + "\n"


def decoder_h():
    out = cpp_header(["The daemon's side of the agent link's records: Thrift's decoded structs (records.thrift)",
                      "-> store rows, each stamped with the capture the daemon decided (never the batch's own).",
                      "Strings move into the rows instead of being copied."],
                     ["cstddef", "cstdint", "utility"], ["fleetscope/store/rows.h", "records_types.h"],
                     "fleetscope::daemon::records")
    for t in wire_tables():
        out.append(f"inline store::{t.struct} decode(rpc::{record_name(t)}&& w, int64_t capture_id) {{")
        out.append(f"  store::{t.struct} r;")
        for c in wire_columns(t):
            name = wire_name(c)
            value = f"std::move(w.{name})" if c.t == "str" else f"w.{name}"
            if is_enum(c):
                value = f"static_cast<store::{c.t}>(w.{name})"
            if wire_required(c):
                out.append(f"  r.{c.m} = {value};")
            else:
                out.append(f"  if (w.__isset.{name}) r.{c.m} = {value};")
        out.append("  r.captureId = capture_id;")
        out.append("  return r;")
        out.append("}")
        out.append("")
    rows = [t for t in wire_tables() if t.event]
    out.append("// Rows of every event table in the batch (GPU facts are not rows).")
    out.append("inline size_t row_count(const rpc::RecordBatch& b) {")
    out.append("  return " + " + ".join(f"b.{t.plural}.size()" for t in rows) + ";")
    out.append("}")
    out.append("")
    out.append("// Hands every record of `b` to `add` as a store row (GPU facts first), consuming the batch.")
    out.append("template <class Add>")
    out.append("void for_each_row(rpc::RecordBatch&& b, int64_t capture_id, Add&& add) {")
    for t in wire_tables():
        out.append(f"  for (auto& record : b.{t.plural}) add(decode(std::move(record), capture_id));")
    out.append("}")
    out.append("")
    out.append("}  // namespace fleetscope::daemon::records")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.read_text() == text:
        return
    path.write_text(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="directory for the generated files")
    ap.add_argument("--docs", help="write schema.md to this file")
    args = ap.parse_args()
    if args.docs:
        write(pathlib.Path(args.docs), markdown())
    if args.out:
        out = pathlib.Path(args.out)
        sql = ddl()
        write(out / "trace.sql", sql)
        write(out / "schema.md", markdown())
        write(out / "embedded_schema.cpp", embedded_cpp(sql))
        write(out / "records.thrift", records_thrift())
        write(out / "include/fleetscope/store/enums.h", enums_h())
        write(out / "include/fleetscope/store/tables.h", tables_h())
        write(out / "include/fleetscope/store/table_io.h", table_io_h())
        write(out / "include/fleetscope/store/table_columns.h", table_columns_h())
        write(out / "include/fleetscope/store/nsys_columns.h", nsys_columns_h())
        write(out / "include/fleetscope/agent_link/record_encoder.h", encoder_h())
        write(out / "include/fleetscope/daemon/record_decoder.h", decoder_h())
        write(out / "include/fleetscope/daemon/rpc_views.h", rpc_views_h())


if __name__ == "__main__":
    main()
