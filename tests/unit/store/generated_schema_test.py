#!/usr/bin/env python3
"""Every column of schema/tables.py reaches everything gen_schema.py generates from it (issue 23,
"each table described once"): the DDL and a file migrated from schema 1, docs/schema.md's text, the
row structs, the ENUM_* tables' C++ enums and labels, the store's insert and read code (table_io.h), the agent link's record structs, encoder
and decoder, the nsys importer's copy and the Chrome-trace export's column table.

  generated_schema_test.py --generated DIR    checks the build's generated files (DIR: the
                                              build's schema/generated)
  generated_schema_test.py --probe            adds one column to the kernel table in memory, in
                                              one place (a C(...) line with since=), generates
                                              everything again and checks that the new column is
                                              in every output: adding a column is a one-place
                                              change plus its translation. That includes the
                                              three consumers that map by table (the nsys
                                              importer's loop, the export's writer, the daemon's
                                              RPC kernel view), whose sources are checked to take
                                              the generated path and name no column by hand.
                                              The same for the daemon's tables (workflow_metrics,
                                              lane_plans, sharing_events): the column reaches
                                              their row structs and generated insert and read code.
  generated_schema_test.py --sources ROOT     the code that writes and reads the daemon's tables
                                              (the daemon, the GUI, the analyzer, ...) names no
                                              column list of its own: it inserts and reads
                                              through the generated code, so a column added in
                                              tables.py reaches every writer and reader of them.

Reads the generated text, not the generator's functions, where it can (the SQL runs in SQLite), so a
generator change that drops a column from one output fails here. Exits 1 naming each gap.
"""
import argparse
import pathlib
import re
import sqlite3
import sys

SCHEMA = pathlib.Path(__file__).resolve().parents[3] / "schema"
sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, str(SCHEMA))
import gen_schema as G  # noqa: E402
import tables as T  # noqa: E402

problems = []


def check(ok, what):
    if not ok:
        problems.append(what)
    return ok


def block(text, opening, closing):
    """The text between `opening` and the next `closing`, or None."""
    start = text.find(opening)
    if start < 0:
        return None
    end = text.find(closing, start + len(opening))
    return text[start + len(opening):end if end >= 0 else len(text)]


def sql_type(c):
    return re.match(r"[A-Z]+", c.sql).group(0)


def insert_columns(t):
    """The columns an insert fills: a member or a bind expression, except an id the database gives."""
    return [c for c in t.columns if (c.t or c.bind) and not G.auto_id(c)]


# ---------------------------------------------------------------------------------------------


def check_ddl(trace_sql):
    db = sqlite3.connect(":memory:")
    try:
        db.executescript(trace_sql)
    except sqlite3.Error as e:
        check(False, f"trace.sql does not run in SQLite: {e}")
        return
    check_table_shapes(db, "trace.sql", types=True)
    described = {t.name for t in T.TABLES}
    extra = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    check(extra <= described, f"trace.sql: tables not in tables.py: {sorted(extra - described)}")


def check_table_shapes(db, where, types):
    for t in T.TABLES:
        info = db.execute(f"PRAGMA table_info({t.name})").fetchall()  # cid, name, type, notnull, ...
        if not check(info, f"{where}: no table {t.name}"):
            continue
        names = [r[1] for r in info]
        check(names == [c.name for c in t.columns],
              f"{where}: {t.name} has columns {names}, tables.py {[c.name for c in t.columns]}")
        if not types:
            continue
        for c, r in zip(t.columns, info):
            check(r[2].split()[0].upper() == sql_type(c), f"{where}: {t.name}.{c.name} is {r[2]}, tables.py {c.sql}")
            not_null = "NOT NULL" in c.sql
            check(bool(r[3]) == not_null, f"{where}: {t.name}.{c.name} NOT NULL is {bool(r[3])}")


def check_migration(v1_sql, steps):
    """A schema-1 file migrated step by step has every table and column of tables.py, in order."""
    check(len(steps) == T.SCHEMA_VERSION - 1,
          f"migrations: {len(steps)} steps for schema 1 to {T.SCHEMA_VERSION}")
    db = sqlite3.connect(":memory:")
    db.executescript(v1_sql)
    for n, step in enumerate(steps):
        try:
            db.executescript(step)
        except sqlite3.Error as e:
            check(False, f"migration v{n + 1} -> v{n + 2} fails on a schema-1 file: {e}")
            return
    check_table_shapes(db, f"a schema-1 file migrated to {T.SCHEMA_VERSION}", types=False)
    for t in T.TABLES:
        for c in t.columns:
            if c.since:
                check(any(f"ALTER TABLE {t.name} ADD COLUMN {c.name} " in s for s in steps[c.since - 2:c.since - 1]),
                      f"migrations: {t.name}.{c.name} (since={c.since}) is not added by step v{c.since - 1} -> v{c.since}")


def struct_members(text, struct):
    body = block(text, f"\nstruct {struct} {{\n", "\n};")
    if body is None:
        return None
    return [m.groups() for m in re.finditer(r"^  (.+?) (\w+)( = [^;]+)?;", body, re.M)]


def check_structs(tables_h):
    for t in G.struct_tables():
        members = struct_members(tables_h, t.struct)
        if not check(members is not None, f"tables.h: no struct {t.struct}"):
            continue
        expected = []
        for c in G.member_columns(t):
            expected.append(c.m)
            if c.intern:
                expected.append(c.intern)
        names = [m[1] for m in members]
        check(names == expected, f"tables.h: struct {t.struct} has {names}, tables.py {expected}")
        for ctype, name, init in members:
            # A member that is neither optional nor a string must start with a value: a row made
            # field by field must never carry an indeterminate one.
            if not init and not ctype.startswith("std::optional<") and ctype != "std::string":
                check(False, f"tables.h: {t.struct}::{name} ({ctype}) has no initializer (give it default= in tables.py)")
    event = [t.struct for t in G.event_tables()]
    macro = block(tables_h, "#define FLEETSCOPE_EVENT_ROWS(X)", "\n\n") or ""
    listed = re.findall(r"X\((\w+), \w+\)", macro)
    check(listed == event, f"tables.h: FLEETSCOPE_EVENT_ROWS lists {listed}, tables.py's event tables {event}")


def check_table_io(table_io_h):
    for t in G.struct_tables():
        body = block(table_io_h, f"struct TableIo<{t.struct}> {{", "\n};")
        if not check(body is not None, f"table_io.h: no TableIo<{t.struct}>"):
            continue
        inserted = re.search(r'insert_columns = "([^"]*)"', body).group(1).split(", ")
        expected = [c.name for c in insert_columns(t)]
        check(inserted == expected, f"table_io.h: {t.name} inserts {inserted}, tables.py {expected}")
        check(f"insert_count = {len(expected)};" in body, f"table_io.h: {t.name} insert_count")
        binds = re.findall(r"s\.bind\(p \+ (\d+), ", body)
        check(binds == [str(i) for i in range(len(expected))], f"table_io.h: {t.name} binds {len(binds)} of {len(expected)} columns")
        selected = re.search(r'select_columns = "([^"]*)"', body).group(1)
        read = block(body, "read(const Statement& s) {", "return r;") or ""
        for c in G.member_columns(t):
            expr = re.escape(c.read_sql or c.name)
            check(re.search(rf"(^|, ){expr}(, |$)", selected), f"table_io.h: {t.name} does not select {c.name}")
            check(f"r.{c.intern or c.m} = " in read, f"table_io.h: {t.name} does not read {c.name} into the row")
        # A column nothing inserts must be one the database may leave NULL (else every insert fails).
        for c in t.columns:
            if c.name not in expected and not G.auto_id(c):
                check(c.nullable, f"tables.py: {t.name}.{c.name} is NOT NULL but no row member or bind fills it")


def check_wire(records_thrift, encoder_h, decoder_h):
    batch = block(records_thrift, "struct RecordBatch {", "\n}") or ""
    batch_ids = [t.wire_batch for t in G.wire_tables()]
    check(len(set(batch_ids)) == len(batch_ids) and not {1, 2} & set(batch_ids),
          f"tables.py: RecordBatch field ids {batch_ids} repeat or take 1/2 (capture_id, sequence)")
    for t in G.event_tables():
        check(t.wire_batch, f"tables.py: event table {t.name} has no wire_batch: agents could not send its rows")
    for t in G.wire_tables():
        record = G.record_name(t)
        check(f"  {t.wire_batch}: list<{record}> {t.plural}," in batch, f"records.thrift: RecordBatch has no field {t.wire_batch} for {t.name}")
        fields = block(records_thrift, f"struct {record} {{\n", "\n}")
        if not check(fields is not None, f"records.thrift: no struct {record}"):
            continue
        got = re.findall(r"^  (\d+): (?:required|optional) \w+ (\w+),", fields, re.M)
        wire = G.wire_columns(t)
        expected = [(str(c.wire), G.wire_name(c)) for c in wire]
        check(got == expected, f"records.thrift: {record} has {got}, tables.py {expected}")
        ids = [c.wire for c in wire]
        check(len(set(ids)) == len(ids), f"tables.py: {t.name} repeats a wire id: {ids}")
        check(not any(c.name == "captureId" for c in wire), f"tables.py: {t.name}.captureId travels (the daemon decides the capture)")
        enc = block(encoder_h, f"inline void encode(wire::Writer& w, const store::{t.struct}& r) {{", "\n}") or ""
        dec = block(decoder_h, f"decode(rpc::{record}&& w, int64_t capture_id) {{", "\n}") or ""
        for c in wire:
            check(re.search(rf"_field\({c.wire}, (static_cast<int32_t>\()?r\.{c.m}\b", enc),
                  f"record_encoder.h: {t.struct} does not encode {c.name} as field {c.wire}")
            check(f"r.{c.m} = " in dec, f"record_decoder.h: {record} does not decode {c.name}")
        if any(c.name == "captureId" for c in t.columns):
            check("r.captureId = capture_id;" in dec, f"record_decoder.h: {record} does not stamp the capture")


def check_nsys(nsys_columns_h):
    for t in G.nsys_tables():
        body = block(nsys_columns_h, f"struct Columns<{t.struct}> {{", "\n};")
        if not check(body is not None, f"nsys_columns.h: no Columns<{t.struct}>"):
            continue
        for c in G.nsys_columns(t):
            check(f'"{c.name}"' in body and f"row.{c.m} = " in body,
                  f"nsys_columns.h: {t.name}.{c.name} (an nsys column) is not copied")


def check_nsys_loop(nsys_columns_h):
    """The nsys importer's one import loop runs over FLEETSCOPE_NSYS_EVENT_ROWS: every event table
    an export carries must be listed, so its columns are copied with no line in the importer."""
    macro = block(nsys_columns_h, "#define FLEETSCOPE_NSYS_EVENT_ROWS(X)", "\n\n") or ""
    listed = re.findall(r"X\((\w+), (\w+)\)", macro)
    expected = [(t.struct, t.plural) for t in G.nsys_tables() if t.event]
    check(listed == expected, f"nsys_columns.h: FLEETSCOPE_NSYS_EVENT_ROWS lists {listed}, tables.py {expected}")


def check_rpc_views(records_thrift, rpc_views_h):
    """Every column marked rpc= is a field of its table's view (records.thrift) under its id and is
    mapped into it by rpc_views.h; a view's ids are unique."""
    for t in G.rpc_view_tables():
        view = G.rpc_view_name(t)
        fields = block(records_thrift, f"struct {view} {{\n", "\n}")
        if not check(fields is not None, f"records.thrift: no struct {view} (the RPC view of {t.name})"):
            continue
        got = re.findall(r"^  (\d+): (?:required|optional) [\w<>]+ (\w+),", fields, re.M)
        expected = [(str(rpc.field), rpc.name) for rpc, _ in G.rpc_fields(t)]
        check(got == expected, f"records.thrift: {view} has {got}, tables.py {expected}")
        names = [n for _, n in expected]
        check(len(set(names)) == len(names), f"tables.py: {t.name}'s RPC view repeats a field name: {names}")
        body = block(rpc_views_h, f"rpc::{view} rpc_view(const store::{t.struct}& r, Name&& name) {{", "\n}") or ""
        for rpc, cols in G.rpc_fields(t):
            check(re.search(rf"v\.(__set_)?{rpc.name}\b", body), f"rpc_views.h: {view}.{rpc.name} is not set")
            for c in cols:
                check(re.search(rf"r\.{c.intern or c.m}\b", body), f"rpc_views.h: {t.name}.{c.name} does not reach {view}.{rpc.name}")


# The code that consumes the generated outputs by table, not by hand: each must go through the
# generic path (so a column added in tables.py reaches it with no edit) and name no column itself.
ROOT = SCHEMA.parent
CONSUMERS = {
    "collector/importers/src/nsys_importer.cpp": ["FLEETSCOPE_NSYS_EVENT_ROWS(", "Columns::read(row, r, str)"],
    "collector/export/src/chrome_trace.cpp": ["void write_rows(", "emit_with_args(rows)"],
    "daemon/src/rpc_handler.cpp": ["rpc_views::rpc_view(k, name)", "rpc_views::text_bytes(row)"],
}


def check_consumers():
    for path, uses in CONSUMERS.items():
        source = (ROOT / path).read_text()
        for use in uses:
            check(use in source, f"{path}: does not use {use!r} (the generated, by-table path)")
    handler = (ROOT / "daemon/src/rpc_handler.cpp").read_text()
    kernels_in_window = block(handler, "RpcHandler::kernels_in_window(", "\n}\n") or ""
    check(kernels_in_window, "daemon/src/rpc_handler.cpp: no RpcHandler::kernels_in_window")
    for t in G.rpc_view_tables():
        for rpc, _ in G.rpc_fields(t):
            check(not re.search(rf"\.(__set_)?{rpc.name}\b\s*[(=]", kernels_in_window),
                  f"daemon/src/rpc_handler.cpp: kernels_in_window sets {G.rpc_view_name(t)}.{rpc.name} by hand")
    nsys = (ROOT / "collector/importers/src/nsys_importer.cpp").read_text()
    for t in G.nsys_tables():
        if t.event:
            check(f"Columns<store::{t.struct}>" not in nsys, f"nsys_importer.cpp: reads {t.name} in a block of its own")


def check_table_columns(table_columns_h):
    for t in T.TABLES:
        body = block(table_columns_h, f"inline constexpr Column {G.columns_symbol(t)}[] = {{", "\n};")
        if not check(body is not None, f"table_columns.h: no {G.columns_symbol(t)}"):
            continue
        names = re.findall(r'^    \{"(\w+)", Kind::', body, re.M)
        check(names == [c.name for c in t.columns], f"table_columns.h: {t.name} lists {names}")
        check(f'{{"{t.name}", {G.columns_symbol(t)}, ' in table_columns_h, f"table_columns.h: kTables lacks {t.name}")


def check_enums(enums_h):
    """Every ENUM_* table's values are its C++ enum's constants, and its labels what the label
    functions return: written once, in tables.py."""
    for t in G.enum_tables():
        e = t.enum
        body = block(enums_h, f"enum {e.cpp} : int32_t {{\n", "\n};")
        if not check(body is not None, f"enums.h: no enum {e.cpp} ({t.name})"):
            continue
        constants = re.findall(r"^  (\w+) = (-?\d+),$", body, re.M)
        expected = [(e.prefix + v[3], str(v[0])) for v in t.values]
        check(constants == expected, f"enums.h: {e.cpp} is {constants}, {t.name} holds {expected}")
        for fn, field in ((e.label, 2), (e.short, 3)):
            if not fn:
                continue
            cases = re.findall(r'case (-?\d+):\n\s+return "([^"]*)";',
                               block(enums_h, f"inline const char* {fn}(int32_t value) {{", "\n}\n") or "")
            check(cases == [(str(v[0]), v[field]) for v in t.values], f"enums.h: {fn} returns {cases}")


def check_docs(schema_md):
    for t in T.TABLES:
        body = block(schema_md, f"\n## {t.name}\n", "\n## ")
        if not check(body is not None, f"schema.md: no section {t.name}"):
            continue
        for c in t.columns:
            check(f"| `{c.name}` | {sql_type(c)} |" in body, f"schema.md: {t.name} lacks {c.name}")


def check_all(out):
    """out: name -> generated text."""
    check_ddl(out["trace.sql"])
    check_migration(out["v1.sql"], out["migrations"])
    check_docs(out["schema.md"])
    check_enums(out["enums.h"])
    check_structs(out["tables.h"])
    check_table_io(out["table_io.h"])
    check_wire(out["records.thrift"], out["record_encoder.h"], out["record_decoder.h"])
    check_nsys(out["nsys_columns.h"])
    check_nsys_loop(out["nsys_columns.h"])
    check_table_columns(out["table_columns.h"])
    check_rpc_views(out["records.thrift"], out["rpc_views.h"])


def read_generated(directory):
    d = pathlib.Path(directory)
    inc = d / "include" / "fleetscope"
    embedded = (d / "embedded_schema.cpp").read_text()
    # trace_sql, index_sql, v1_sql, then the migration steps in order.
    strings = re.findall(r'R"fleetscope_sql\((.*?)\)fleetscope_sql"', embedded, re.S)
    return {
        "trace.sql": (d / "trace.sql").read_text(),
        "v1.sql": strings[2],
        "migrations": strings[3:],
        "schema.md": (d / "schema.md").read_text(),
        "enums.h": (inc / "store" / "enums.h").read_text(),
        "tables.h": (inc / "store" / "tables.h").read_text(),
        "table_io.h": (inc / "store" / "table_io.h").read_text(),
        "nsys_columns.h": (inc / "store" / "nsys_columns.h").read_text(),
        "table_columns.h": (inc / "store" / "table_columns.h").read_text(),
        "records.thrift": (d / "records.thrift").read_text(),
        "record_encoder.h": (inc / "agent_link" / "record_encoder.h").read_text(),
        "record_decoder.h": (inc / "daemon" / "record_decoder.h").read_text(),
        "rpc_views.h": (inc / "daemon" / "rpc_views.h").read_text(),
    }


def generate():
    return {
        "trace.sql": G.ddl(),
        "v1.sql": (SCHEMA / "migrations" / "v1.sql").read_text(),
        "migrations": G.migrations(),
        "schema.md": G.markdown(),
        "enums.h": G.enums_h(),
        "tables.h": G.tables_h(),
        "table_io.h": G.table_io_h(),
        "nsys_columns.h": G.nsys_columns_h(),
        "table_columns.h": G.table_columns_h(),
        "records.thrift": G.records_thrift(),
        "record_encoder.h": G.encoder_h(),
        "record_decoder.h": G.decoder_h(),
        "rpc_views.h": G.rpc_views_h(),
    }


PROBE = "probeClusterId"


def probe():
    """One C(...) line added to the kernel table, as docs/architecture.md says a column is added;
    everything is generated again and the column must be in every output."""
    kernel = next(t for t in T.TABLES if t.struct == "Kernel")
    wire = max(c.wire for c in kernel.columns if c.wire) + 1
    rpc = max(c.rpc.field for c in kernel.columns if c.rpc) + 1
    T.SCHEMA_VERSION += 1
    kernel.columns.append(T.C(PROBE, "INTEGER", "probe: a column added in one place", t="i64",
                              wire=wire, since=T.SCHEMA_VERSION, chrome="probe",
                              rpc=T.Rpc(rpc, "probe_cluster_id")))
    out = generate()
    check_all(out)
    # Beyond the coverage checks: the new column by name in each output.
    places = {
        "trace.sql": f"  {PROBE} ",
        "schema.md": f"| `{PROBE}` |",
        "tables.h": f"std::optional<int64_t> {PROBE};",
        "table_io.h": f"r.{PROBE} = opt<int64_t>(",
        "nsys_columns.h": f'row.{PROBE} = r.opt("{PROBE}");',
        "table_columns.h": f'{{"{PROBE}", Kind::integer, true, false, INT64_MIN, INT64_MAX, Chrome::arg, "probe", ""}}',
        "records.thrift": f"{wire}: optional i64 {PROBE},",
        "record_encoder.h": f"w.i64_field({wire}, r.{PROBE});",
        "record_decoder.h": f"if (w.__isset.{PROBE}) r.{PROBE} = w.{PROBE};",
        # The three consumers that map by table (check_consumers: they take these generated paths).
        # The daemon's RPC kernel view: a field of KernelRow, set by rpc_view.
        "rpc_views.h": f"if (r.{PROBE}) v.__set_probe_cluster_id(*r.{PROBE});",
    }
    for name, text in places.items():
        check(text in out[name], f"probe: {PROBE} not in the generated {name} ({text!r})")
    check(f"ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL ADD COLUMN {PROBE} INTEGER;" in out["migrations"][-1],
          f"probe: the last migration step does not add {PROBE}")
    view = block(out["records.thrift"], "struct KernelRow {\n", "\n}") or ""
    check(f"  {rpc}: optional i64 probe_cluster_id," in view, f"probe: {PROBE} is not field {rpc} of the RPC KernelRow")
    # The nsys importer's one loop copies it: the kernel table is in the loop's list, and
    # Columns<Kernel>::read (checked above) fills the column.
    loop = block(out["nsys_columns.h"], "#define FLEETSCOPE_NSYS_EVENT_ROWS(X)", "\n\n") or ""
    check("X(Kernel, kernels)" in loop, "probe: the nsys import loop does not run over the kernel table")
    # The export's one writer writes every Chrome::arg column of a table kTables marks chrome.
    check('{"CUPTI_ACTIVITY_KIND_KERNEL", kCuptiActivityKindKernelColumns, true}' in out["table_columns.h"],
          "probe: the export does not write the kernel table")
    check_consumers()


# Tables whose writers and readers outside the store (the daemon's host database tables, read by the
# GUI and the analyzer too) use the generated row structs and TableIo instead of their own SQL.
DAEMON_TABLES = ("workflow_metrics", "lane_plans", "sharing_events")


def probe_daemon_tables():
    """One column added to each daemon table in one place: it must be in the row struct, the
    insert (columns and binds) and the read (select and row) that HostStore, the GUI and the
    analyzer use (store::io::insert_sql / select_sql / TableIo::read)."""
    added = {}
    for t in T.TABLES:
        if t.name in DAEMON_TABLES:
            name = f"probe_{t.name}"
            t.columns.append(T.C(name, "INTEGER", "probe: a column added in one place", t="i64",
                                 since=T.SCHEMA_VERSION))
            added[t.name] = (t, name)
    check(len(added) == len(DAEMON_TABLES), f"probe: tables.py lacks one of {DAEMON_TABLES}")
    out = generate()
    check_all(out)
    for t, name in added.values():
        if not check(t.struct, f"tables.py: {t.name} has no struct= (its writers cannot use TableIo)"):
            continue
        check(f"std::optional<int64_t> {name};" in (block(out["tables.h"], f"\nstruct {t.struct} {{\n", "\n};") or ""),
              f"probe: {name} not in struct {t.struct}")
        body = block(out["table_io.h"], f"struct TableIo<{t.struct}> {{", "\n};") or ""
        for text in (f'insert_columns = "', f'select_columns = "'):
            cols = re.search(re.escape(text) + r'([^"]*)"', body)
            check(cols and name in cols.group(1).split(", "), f"probe: TableIo<{t.struct}> {text}... lacks {name}")
        check(f"r.{name});" in body, f"probe: TableIo<{t.struct}>::bind does not bind {name}")
        check(f"r.{name} = opt<int64_t>(" in body, f"probe: TableIo<{t.struct}>::read does not read {name}")
        check(f"ALTER TABLE {t.name} ADD COLUMN {name} INTEGER;" in out["migrations"][-1],
              f"probe: the last migration step does not add {t.name}.{name}")


def check_sources(root):
    """No product source writes or reads a daemon table with a column list of its own: an INSERT
    INTO one of them, or a SELECT of two or more of its columns, is a second description of the
    table that a column added in tables.py would not reach."""
    root = pathlib.Path(root)
    columns = {t.name: {c.name for c in t.columns} for t in T.TABLES if t.name in DAEMON_TABLES}
    product = ("analyzer", "cli", "collector", "daemon", "gui", "sharer", "launcher", "export", "schema/store")
    files = [f for d in product if (root / d).is_dir() for f in (root / d).rglob("*")
             if f.suffix in (".cpp", ".h", ".cc")]
    check(files, f"--sources {root}: no product sources found")
    for f in files:
        # Adjacent string literals form one: join them so a statement split over lines is whole.
        text = re.sub(r'"\s*\n\s*"', "", f.read_text(errors="replace"))
        rel = f.relative_to(root)
        for table in DAEMON_TABLES:
            for m in re.finditer(rf"INSERT\s+(?:OR\s+\w+\s+)?INTO\s+{table}\b", text, re.I):
                check(False, f"{rel}: writes {table} with SQL of its own ({m.group(0)}): use "
                             "store::io::insert_sql / bind_row (table_io.h)")
            for m in re.finditer(rf"SELECT\s+((?:(?!SELECT\b)[^\"])*?)\s+FROM\s+{table}\b", text, re.I):
                named = [item.strip().split(".")[-1] for item in m.group(1).split(",")]
                if sum(1 for item in named if item in columns[table]) >= 2:
                    check(False, f"{rel}: reads {table}'s columns by hand (SELECT {m.group(1)}): use "
                                 "store::io::select_sql / TableIo::read (table_io.h)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--generated", help="the build's schema/generated directory")
    ap.add_argument("--probe", action="store_true", help="add a column in memory and check it everywhere")
    ap.add_argument("--sources", help="the source tree: check the daemon tables' writers and readers")
    args = ap.parse_args()
    if not args.generated and not args.probe and not args.sources:
        ap.error("give --generated DIR, --probe or --sources ROOT")
    if args.generated:
        check_all(read_generated(args.generated))
    if args.sources:
        check_sources(args.sources)
    if args.probe:
        probe()
        probe_daemon_tables()
    for p in problems:
        print(p)
    columns = sum(len(t.columns) for t in T.TABLES)
    print(f"{len(T.TABLES)} tables, {columns} columns: {len(problems)} gaps")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
