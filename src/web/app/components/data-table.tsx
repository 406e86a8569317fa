/**
 * The one table every result list uses: sortable headers, a text filter, select filters on chosen
 * columns, paging, and a button per row that opens its details. Sorting, filtering and paging happen in
 * the browser over the whole list the API returned. With `inUrl`, the filters and the sort live in the
 * page's address (`q`, `sort`, `desc`, `f.<column>`), so a reload, a bookmark or a shared link shows
 * the same rows.
 */
import type { ComponentChildren } from "preact";
import { useEffect, useMemo, useState } from "preact/hooks";
import { navigate } from "../router.ts";
import { ScrollArea } from "./scroll-area.tsx";

export interface Column<R> {
  id: string;
  label: string;
  /** What the column sorts and filters by. */
  value: (row: R) => string | number;
  /** What the text filter searches in the column, when it is not the value (e.g. the ports, not their count). */
  text?: (row: R) => string;
  /** How the cell shows; default the value. */
  render?: (row: R) => ComponentChildren;
  /** Offer a select of this column's distinct values. */
  filter?: boolean;
  /** For a column holding several values (e.g. kinds): each of them, to filter by any one. */
  filterValues?: (row: R) => Array<string | number>;
  /** Label of a select filter's value (e.g. severity 1 → "1 critical"); default the value. */
  filterLabel?: (value: string | number) => string;
  numeric?: boolean;
  /** false for columns of controls (e.g. actions). */
  sortable?: boolean;
}

export interface DataTableProps<R> {
  /** What the rows are, plural ("issues"): the caption and the counts say it. */
  noun: string;
  rows: R[];
  columns: Column<R>[];
  rowKey: (row: R, index: number) => string;
  /** Opens a row's details from the button in its first cell. */
  onOpen?: (row: R) => void;
  initialSort?: { id: string; descending?: boolean };
  /** Initial values of select filters by column id. */
  initialFilters?: Record<string, string>;
  /** Keep the text filter, the select filters and the sort in the page's address. */
  inUrl?: boolean;
}

interface TableState {
  text: string;
  filters: Record<string, string>;
  sort: { id: string; descending?: boolean } | undefined;
}

/** The table's state as the address holds it (`q`, `sort`, `desc`, `f.<column>`). */
function stateFromUrl(): TableState {
  const query = new URLSearchParams(window.location.search);
  const filters: Record<string, string> = {};
  for (const [key, value] of query) if (key.startsWith("f.")) filters[key.slice(2)] = value;
  const sort = query.get("sort");
  return {
    text: query.get("q") ?? "",
    filters,
    sort: sort ? { id: sort, descending: query.get("desc") === "1" } : undefined,
  };
}

/** The address with the table's state in its query, other parameters kept. */
function urlWithState(state: TableState, defaultSort: string): string {
  const query = new URLSearchParams(window.location.search);
  for (const key of [...query.keys()])
    if (key === "q" || key === "sort" || key === "desc" || key.startsWith("f.")) query.delete(key);
  if (state.text) query.set("q", state.text);
  for (const [id, value] of Object.entries(state.filters)) if (value !== "") query.set(`f.${id}`, value);
  if (state.sort && (state.sort.id !== defaultSort || state.sort.descending)) {
    query.set("sort", state.sort.id);
    if (state.sort.descending) query.set("desc", "1");
  }
  const search = query.toString();
  return `${window.location.pathname}${search ? `?${search}` : ""}`;
}

const PAGE_SIZES = [25, 50, 100, 250];
const collator = new Intl.Collator("en", { numeric: true, sensitivity: "base" });

function compare(a: string | number, b: string | number): number {
  if (typeof a === "number" && typeof b === "number") {
    if (Number.isNaN(a)) return Number.isNaN(b) ? 0 : 1;
    if (Number.isNaN(b)) return -1;
    return a - b;
  }
  return collator.compare(String(a), String(b));
}

function valuesOf<R>(column: Column<R>, row: R): Array<string | number> {
  return column.filterValues ? column.filterValues(row) : [column.value(row)];
}

export function DataTable<R>(props: DataTableProps<R>) {
  const { noun, rows, columns, rowKey, onOpen, inUrl } = props;
  const fromUrl = inUrl ? stateFromUrl() : undefined;
  const defaultSort = props.initialSort ?? { id: columns[0].id, descending: false };
  const [sort, setSort] = useState(fromUrl?.sort ?? defaultSort);
  const [text, setText] = useState(fromUrl?.text ?? "");
  const [filters, setFilters] = useState<Record<string, string>>({
    ...props.initialFilters,
    ...fromUrl?.filters,
  });
  useEffect(() => {
    if (inUrl) navigate(urlWithState({ text, filters, sort }, defaultSort.id), { replace: true });
  }, [inUrl, text, filters, sort, defaultSort.id]);
  const [page, setPage] = useState(0);
  const [pageSize, setPageSize] = useState(PAGE_SIZES[0]);
  const idBase = `table-${noun.replace(/\W+/g, "-")}`;

  const choices = useMemo(() => {
    const result: Record<string, Array<string | number>> = {};
    for (const column of columns.filter((c) => c.filter)) {
      const values = [...new Set(rows.flatMap((row) => valuesOf(column, row)))].filter((v) => v !== "");
      result[column.id] = values.sort(compare);
    }
    return result;
  }, [rows, columns]);

  const visible = useMemo(() => {
    const needle = text.trim().toLowerCase();
    const filtered = rows.filter((row) => {
      for (const [id, wanted] of Object.entries(filters)) {
        const column = columns.find((c) => c.id === id);
        if (column && wanted !== "" && !valuesOf(column, row).some((value) => String(value) === wanted))
          return false;
      }
      if (!needle) return true;
      return columns.some((column) =>
        (column.text ? column.text(row) : String(column.value(row))).toLowerCase().includes(needle),
      );
    });
    const column = columns.find((c) => c.id === sort.id) ?? columns[0];
    const sorted = filtered
      .map((row, index) => ({ row, index, key: column.value(row) }))
      .sort((a, b) => compare(a.key, b.key) * (sort.descending ? -1 : 1) || a.index - b.index)
      .map((entry) => entry.row);
    return sorted;
  }, [rows, columns, text, filters, sort]);

  const pages = Math.max(1, Math.ceil(visible.length / pageSize));
  const current = Math.min(page, pages - 1);
  const shown = visible.slice(current * pageSize, (current + 1) * pageSize);
  const first = visible.length === 0 ? 0 : current * pageSize + 1;
  const last = current * pageSize + shown.length;
  const filteredOut = rows.length - visible.length;

  const sortBy = (id: string) => {
    setSort((previous) => ({ id, descending: previous.id === id ? !previous.descending : false }));
    setPage(0);
  };

  return (
    <div class="data-table">
      <div class="table-controls">
        <label>
          Filter {noun}
          <input
            type="search"
            value={text}
            placeholder="Text in any column"
            onInput={(event) => {
              setText((event.target as HTMLInputElement).value);
              setPage(0);
            }}
          />
        </label>
        {columns
          .filter((column) => column.filter)
          .map((column) => (
            <label key={column.id}>
              {column.label}
              <select
                value={filters[column.id] ?? ""}
                onChange={(event) => {
                  setFilters({ ...filters, [column.id]: (event.target as HTMLSelectElement).value });
                  setPage(0);
                }}
              >
                <option value="">All</option>
                {choices[column.id].map((value) => (
                  <option key={String(value)} value={String(value)}>
                    {column.filterLabel ? column.filterLabel(value) : String(value)}
                  </option>
                ))}
              </select>
            </label>
          ))}
      </div>
      <p class="table-count" role="status" aria-live="polite" id={`${idBase}-count`}>
        {visible.length === 0
          ? rows.length === 0
            ? `No ${noun}.`
            : `No ${noun} match the filter.`
          : `Showing ${first}–${last} of ${visible.length.toLocaleString("en")} ${noun}`}
        {filteredOut > 0 && visible.length > 0 ? ` (${filteredOut.toLocaleString("en")} filtered out)` : ""}
      </p>
      <ScrollArea labelledBy={`${idBase}-caption`}>
        <table>
          <caption id={`${idBase}-caption`} class="visually-hidden">
            {noun[0].toUpperCase() + noun.slice(1)}, sortable by column
          </caption>
          <thead>
            <tr>
              {columns.map((column) => {
                const active = sort.id === column.id;
                if (column.sortable === false) {
                  return (
                    <th key={column.id} scope="col">
                      {column.label}
                    </th>
                  );
                }
                return (
                  <th
                    key={column.id}
                    scope="col"
                    class={column.numeric ? "numeric" : undefined}
                    aria-sort={active ? (sort.descending ? "descending" : "ascending") : "none"}
                  >
                    <button type="button" class="sort" onClick={() => sortBy(column.id)}>
                      {column.label}
                      <span aria-hidden="true" class="sort-mark">
                        {active ? (sort.descending ? "▼" : "▲") : "↕"}
                      </span>
                    </button>
                  </th>
                );
              })}
            </tr>
          </thead>
          <tbody>
            {shown.map((row, index) => (
              <tr key={rowKey(row, current * pageSize + index)}>
                {columns.map((column, columnIndex) => {
                  const content = column.render ? column.render(row) : String(column.value(row));
                  const cell =
                    columnIndex === 0 && onOpen ? (
                      <button type="button" class="link" onClick={() => onOpen(row)} title="Open details">
                        {content}
                      </button>
                    ) : (
                      content
                    );
                  return columnIndex === 0 ? (
                    <th key={column.id} scope="row" class={column.numeric ? "numeric" : undefined}>
                      {cell}
                    </th>
                  ) : (
                    <td key={column.id} class={column.numeric ? "numeric" : undefined}>
                      {cell}
                    </td>
                  );
                })}
              </tr>
            ))}
          </tbody>
        </table>
      </ScrollArea>
      {visible.length > PAGE_SIZES[0] && (
        <nav class="pager" aria-label={`Pages of ${noun}`}>
          <button type="button" disabled={current === 0} onClick={() => setPage(current - 1)}>
            Previous
          </button>
          <span>
            Page {current + 1} of {pages}
          </span>
          <button type="button" disabled={current >= pages - 1} onClick={() => setPage(current + 1)}>
            Next
          </button>
          <label>
            Rows per page
            <select
              value={String(pageSize)}
              onChange={(event) => {
                setPageSize(Number((event.target as HTMLSelectElement).value));
                setPage(0);
              }}
            >
              {PAGE_SIZES.map((size) => (
                <option key={size} value={String(size)}>
                  {size}
                </option>
              ))}
            </select>
          </label>
        </nav>
      )}
    </div>
  );
}
