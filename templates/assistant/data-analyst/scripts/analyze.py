#!/usr/bin/env python3
"""Quick analysis of a CSV file using only the Python standard library.

Examples:
  python3 scripts/analyze.py data/sample-sales.csv
  python3 scripts/analyze.py data/sample-sales.csv --derive revenue=units*unit_price \
      --group-by region --value revenue --top 3
  python3 scripts/analyze.py data/sample-sales.csv --derive revenue=units*unit_price \
      --group-by date:month --group-by product --value revenue --agg sum
  python3 scripts/analyze.py data/sample-sales.csv --where region=East \
      --where date>=2025-02-01 --json

Without --group-by it prints a summary of every column and, with --top, the top rows by
--value. With --group-by it prints one row per group: count, sum, mean and the share of the
total for the value column, sorted by the chosen aggregate (largest first).

A group-by column may carry a period suffix when it holds ISO dates (YYYY-MM-DD):
:year, :quarter, :month, :week (ISO week) or :weekday.

Exit status: 0 on success, 1 on data errors (missing file, unknown column), 2 on usage errors.
"""

import argparse
import csv
import datetime
import json
import math
import re
import statistics
import sys

MISSING = {"", "na", "n/a", "nan", "null", "none", "-"}
NUMBER_RE = re.compile(r"^[-+]?[$€£]?\d[\d,]*(\.\d+)?$|^[-+]?[$€£]?\.\d+$")
DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}([ T].*)?$")
FILTER_RE = re.compile(r"^([^<>=!]+?)(>=|<=|!=|=|>|<)(.*)$")
DERIVE_RE = re.compile(r"^\s*(\w+)\s*=\s*([\w.]+)\s*([*/+-])\s*([\w.]+)\s*$")
PERIODS = ("year", "quarter", "month", "week", "weekday")
AGGS = ("sum", "mean", "median", "min", "max", "count")


class DataError(Exception):
    """A problem with the input data or a column name; reported without a traceback."""


def is_missing(value):
    return value is None or value.strip().lower() in MISSING


def to_number(value):
    """Parse '1,234.50', '$12', '-3' into a float; return None if it is not a number."""
    if is_missing(value):
        return None
    text = value.strip()
    if not NUMBER_RE.match(text):
        return None
    try:
        return float(text.replace(",", "").replace("$", "").replace("€", "").replace("£", ""))
    except ValueError:
        return None


def to_date(value):
    if is_missing(value) or not DATE_RE.match(value.strip()):
        return None
    try:
        return datetime.date.fromisoformat(value.strip()[:10])
    except ValueError:
        return None


def read_csv(path):
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            sample = handle.read(4096)
            handle.seek(0)
            try:
                dialect = csv.Sniffer().sniff(sample, delimiters=",;\t|")
            except csv.Error:
                dialect = csv.excel
            reader = csv.DictReader(handle, dialect=dialect)
            if not reader.fieldnames:
                raise DataError(f"{path}: no header row")
            columns = [name.strip() for name in reader.fieldnames]
            rows = []
            for raw in reader:
                rows.append({col: (raw.get(orig) or "") for col, orig in zip(columns, reader.fieldnames)})
            return columns, rows
    except FileNotFoundError:
        raise DataError(f"{path}: file not found")
    except UnicodeDecodeError:
        raise DataError(f"{path}: not UTF-8 text; convert it first (iconv -f latin1 -t utf-8)")


def require_column(columns, name):
    if name not in columns:
        raise DataError(f"unknown column '{name}'; columns are: {', '.join(columns)}")


def apply_derive(columns, rows, spec):
    match = DERIVE_RE.match(spec)
    if not match:
        raise DataError(f"--derive '{spec}': expected NAME=A*B (operators * / + -, A and B columns or numbers)")
    name, left, op, right = match.groups()

    def operand(token, row):
        if token in columns:
            return to_number(row[token])
        number = to_number(token)
        if number is None:
            raise DataError(f"--derive: '{token}' is neither a column nor a number")
        return number

    for row in rows:
        a, b = operand(left, row), operand(right, row)
        if a is None or b is None or (op == "/" and b == 0):
            row[name] = ""
            continue
        result = {"*": a * b, "/": a / b if b else 0, "+": a + b, "-": a - b}[op]
        row[name] = f"{result:.6f}".rstrip("0").rstrip(".")
    if name not in columns:
        columns.append(name)
    return name


def apply_filter(columns, rows, spec):
    match = FILTER_RE.match(spec)
    if not match:
        raise DataError(f"--where '{spec}': expected COLUMN=VALUE or COLUMN>=NUMBER")
    column, op, wanted = match.group(1).strip(), match.group(2), match.group(3).strip()
    require_column(columns, column)
    wanted_num = to_number(wanted)

    def keep(row):
        value = row[column].strip()
        have_num = to_number(value)
        if wanted_num is not None and have_num is not None:
            a, b = have_num, wanted_num
        else:
            a, b = value.lower(), wanted.lower()
        return {"=": a == b, "!=": a != b, ">": a > b, "<": a < b, ">=": a >= b, "<=": a <= b}[op]

    return [row for row in rows if keep(row)]


def classify(values):
    present = [v for v in values if not is_missing(v)]
    if not present:
        return "empty"
    if all(to_number(v) is not None for v in present):
        return "numeric"
    if all(to_date(v) is not None for v in present):
        return "date"
    return "text"


def numeric_stats(values):
    nums = [n for n in (to_number(v) for v in values) if n is not None]
    if not nums:
        return {"count": 0}
    return {
        "count": len(nums),
        "sum": sum(nums),
        "mean": statistics.fmean(nums),
        "median": statistics.median(nums),
        "stdev": statistics.stdev(nums) if len(nums) > 1 else 0.0,
        "min": min(nums),
        "max": max(nums),
    }


def summarize(columns, rows):
    summary = []
    for col in columns:
        values = [row[col] for row in rows]
        kind = classify(values)
        missing = sum(1 for v in values if is_missing(v))
        entry = {"column": col, "type": kind, "missing": missing}
        if kind == "numeric":
            entry.update(numeric_stats(values))
        elif kind == "date":
            dates = sorted(d for d in (to_date(v) for v in values) if d)
            entry.update({"first": dates[0].isoformat(), "last": dates[-1].isoformat(),
                          "distinct": len(set(dates))})
        elif kind == "text":
            counts = {}
            for v in values:
                if not is_missing(v):
                    counts[v.strip()] = counts.get(v.strip(), 0) + 1
            ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
            entry.update({"distinct": len(counts), "most_common": ranked[:3]})
        summary.append(entry)
    return summary


def group_key(row, spec):
    column, _, period = spec.partition(":")
    value = row[column].strip()
    if not period:
        return value if value else "(missing)"
    day = to_date(value)
    if day is None:
        return "(no date)"
    if period == "year":
        return f"{day.year}"
    if period == "quarter":
        return f"{day.year}-Q{(day.month - 1) // 3 + 1}"
    if period == "month":
        return f"{day.year}-{day.month:02d}"
    if period == "week":
        iso = day.isocalendar()
        return f"{iso[0]}-W{iso[1]:02d}"
    return day.strftime("%a")


def group_by(columns, rows, specs, value_col, agg):
    for spec in specs:
        column, _, period = spec.partition(":")
        require_column(columns, column)
        if period and period not in PERIODS:
            raise DataError(f"--group-by '{spec}': period must be one of {', '.join(PERIODS)}")
    groups = {}
    for row in rows:
        key = tuple(group_key(row, spec) for spec in specs)
        groups.setdefault(key, []).append(row[value_col] if value_col else "1")
    total = sum(n for n in (to_number(v) for r in rows for v in [r[value_col] if value_col else "1"]) if n is not None)
    result = []
    for key, values in groups.items():
        stats = numeric_stats(values)
        stats["rows"] = len(values)
        stats["share"] = (stats.get("sum", 0.0) / total) if total else 0.0
        result.append({"group": list(key), **stats})
    sort_field = "rows" if agg == "count" else agg
    result.sort(key=lambda g: (-(g.get(sort_field) or 0), g["group"]))
    return result, total


def fmt(value, decimals=2):
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return f"{value:,.{decimals}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def print_table(headers, rows):
    """Print aligned columns; a column of whole numbers is shown without decimals."""
    decimals = []
    for i in range(len(headers)):
        floats = [r[i] for r in rows if isinstance(r[i], float) and math.isfinite(r[i])]
        decimals.append(0 if all(f == int(f) for f in floats) else 2)
    cells = [[fmt(c, decimals[i]) for i, c in enumerate(row)] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    numeric = [bool(cells) and all(_looks_numeric(r[i]) for r in cells) for i in range(len(headers))]
    pad = lambda text, i: text.rjust(widths[i]) if numeric[i] else text.ljust(widths[i])
    print("  ".join(pad(h, i) for i, h in enumerate(headers)).rstrip())
    print("  ".join("-" * w for w in widths))
    for r in cells:
        print("  ".join(pad(c, i) for i, c in enumerate(r)).rstrip())


def rounded(value):
    """Round floats inside nested JSON data to 4 decimals for readable output."""
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [rounded(v) for v in value]
    return value


def _looks_numeric(text):
    return bool(re.match(r"^-?[\d,]+(\.\d+)?%?$", text))


def print_summary(path, columns, rows, summary):
    print(f"File: {path}")
    print(f"Rows: {len(rows):,}   Columns: {len(columns)}")
    print()
    numeric = [s for s in summary if s["type"] == "numeric"]
    if numeric:
        print("Numeric columns")
        print_table(["column", "count", "missing", "sum", "mean", "median", "stdev", "min", "max"],
                    [[s["column"], s["count"], s["missing"], s["sum"], s["mean"], s["median"],
                      s["stdev"], s["min"], s["max"]] for s in numeric])
        print()
    others = [s for s in summary if s["type"] != "numeric"]
    if others:
        print("Other columns")
        table = []
        for s in others:
            if s["type"] == "date":
                detail = f"{s['first']} to {s['last']} ({s['distinct']} distinct days)"
            elif s["type"] == "text":
                common = ", ".join(f"{v} ({n})" for v, n in s["most_common"])
                detail = f"{s['distinct']} distinct; most common: {common}"
            else:
                detail = "all values missing"
            table.append([s["column"], s["type"], s["missing"], detail])
        print_table(["column", "type", "missing", "detail"], table)


def main(argv):
    parser = argparse.ArgumentParser(description="Summary statistics, group-by and top-N for a CSV file.")
    parser.add_argument("csv", help="path to the CSV file (delimiter , ; tab or | is detected)")
    parser.add_argument("--derive", action="append", default=[], metavar="NAME=A*B",
                        help="add a computed column, e.g. revenue=units*unit_price (repeatable)")
    parser.add_argument("--where", action="append", default=[], metavar="COL=VALUE",
                        help="keep rows matching COL=V, COL!=V, COL>N, COL>=N, COL<N, COL<=N (repeatable)")
    parser.add_argument("--group-by", action="append", default=[], metavar="COL[:PERIOD]",
                        help="group by a column; dates accept :year :quarter :month :week :weekday (repeatable)")
    parser.add_argument("--value", metavar="COL", help="numeric column to aggregate or rank")
    parser.add_argument("--agg", choices=AGGS, default="sum", help="aggregate used for sorting groups (default sum)")
    parser.add_argument("--top", type=int, metavar="N", help="show only the first N groups or rows")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON instead of tables")
    args = parser.parse_args(argv)
    if args.top is not None and args.top < 1:
        parser.error("--top must be at least 1")

    columns, rows = read_csv(args.csv)
    derived = [apply_derive(columns, rows, spec) for spec in args.derive]
    for spec in args.where:
        rows = apply_filter(columns, rows, spec)

    value_col = args.value or (derived[-1] if derived else None)
    if value_col:
        require_column(columns, value_col)
        if classify([r[value_col] for r in rows]) not in ("numeric", "empty"):
            raise DataError(f"--value column '{value_col}' is not numeric")

    if args.group_by:
        if value_col is None and args.agg != "count":
            numeric = [c for c in columns if classify([r[c] for r in rows]) == "numeric"
                       and c not in [s.partition(":")[0] for s in args.group_by]]
            if not numeric:
                raise DataError("no numeric column to aggregate; pass --value or use --agg count")
            value_col = numeric[0]
        groups, total = group_by(columns, rows, args.group_by, value_col, args.agg)
        shown = groups[: args.top] if args.top else groups
        if args.json:
            print(json.dumps(rounded({"file": args.csv, "rows": len(rows), "groupBy": args.group_by,
                                      "value": value_col, "total": total, "groups": shown}), indent=2))
            return 0
        label = value_col or "rows"
        print(f"File: {args.csv}   Rows: {len(rows):,}   Value: {label}   Sorted by: {args.agg}")
        if value_col:
            print(f"Total {label}: {fmt(total, 0 if total == int(total) else 2)}")
        print()
        if value_col:
            headers = args.group_by + ["rows", "sum", "mean", "median", "min", "max", "share"]
            table = [g["group"] + [g["rows"], g.get("sum", 0.0), g.get("mean", 0.0), g.get("median", 0.0),
                                   g.get("min", 0.0), g.get("max", 0.0), f"{g['share'] * 100:.1f}%"]
                     for g in shown]
        else:
            headers = args.group_by + ["rows", "share"]
            table = [g["group"] + [g["rows"], f"{g['share'] * 100:.1f}%"] for g in shown]
        print_table(headers, table)
        hidden = len(groups) - len(shown)
        if hidden:
            print(f"\n({hidden} more group{'s' if hidden > 1 else ''} not shown; raise --top to see them)")
        return 0

    summary = summarize(columns, rows)
    top_rows = []
    if args.top and value_col:
        ranked = [r for r in rows if to_number(r[value_col]) is not None]
        ranked.sort(key=lambda r: -to_number(r[value_col]))
        top_rows = ranked[: args.top]
    if args.json:
        print(json.dumps(rounded({"file": args.csv, "rows": len(rows), "columns": columns,
                                  "summary": summary, "top": top_rows}), indent=2, default=str))
        return 0
    print_summary(args.csv, columns, rows, summary)
    if top_rows:
        print()
        print(f"Top {len(top_rows)} rows by {value_col}")
        print_table(columns, [[r[c] for c in columns] for r in top_rows])
    elif args.top and not value_col:
        print("\n(--top without --group-by needs --value or --derive to rank rows)")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except DataError as error:
        print(f"analyze.py: {error}", file=sys.stderr)
        sys.exit(1)
    except BrokenPipeError:
        sys.exit(0)
