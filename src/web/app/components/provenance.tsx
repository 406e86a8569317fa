/**
 * How an entity was reached from a seed, drawn left to right (layers from ../provenance.ts); each arrow
 * names the task that ran. The same path is written out as a list below the picture.
 */
import { type Named, provenanceLayers, type TaskResult } from "../provenance.ts";
import { ScrollArea } from "./scroll-area.tsx";

const NODE_WIDTH = 190;
const NODE_HEIGHT = 46;
const GAP_X = 90;
const GAP_Y = 18;
const MARGIN = 10;

function truncate(text: string, length: number): string {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}

export function ProvenanceGraph({
  entity,
  ancestors,
  taskResults,
}: {
  entity: Named;
  ancestors?: Named[];
  taskResults?: TaskResult[];
}) {
  const layers = provenanceLayers(entity, ancestors, taskResults);
  if (layers.length === 1) {
    return (
      <p class="hint">
        No provenance was recorded: this is a seed, or the run did not say how it was reached.
      </p>
    );
  }
  const tallest = Math.max(...layers.map((layer) => layer.length));
  const width = MARGIN * 2 + layers.length * NODE_WIDTH + (layers.length - 1) * GAP_X;
  const height = MARGIN * 2 + tallest * NODE_HEIGHT + (tallest - 1) * GAP_Y;
  const position = new Map<string, { x: number; y: number }>();
  layers.forEach((layer, column) => {
    const columnHeight = layer.length * NODE_HEIGHT + (layer.length - 1) * GAP_Y;
    layer.forEach((node, row) => {
      position.set(node.key, {
        x: MARGIN + column * (NODE_WIDTH + GAP_X),
        y: (height - columnHeight) / 2 + row * (NODE_HEIGHT + GAP_Y),
      });
    });
  });
  const edges = layers
    .slice(0, -1)
    .flatMap((layer, column) =>
      layer.flatMap((from) => layers[column + 1].map((to) => ({ from, to, label: from.tasks.join(", ") }))),
    );
  return (
    <div class="provenance">
      <ScrollArea class="graph-scroll" label="How it was reached, as a graph">
        <svg
          viewBox={`0 0 ${width} ${height}`}
          width={width}
          height={height}
          role="img"
          aria-label={`How ${entity.name} was reached from a seed; the list below says the same.`}
        >
          <defs>
            <marker
              id="arrow"
              viewBox="0 0 10 10"
              refX="9"
              refY="5"
              markerWidth="7"
              markerHeight="7"
              orient="auto-start-reverse"
            >
              <path d="M 0 0 L 10 5 L 0 10 z" class="arrow-head" />
            </marker>
          </defs>
          {edges.map(({ from, to, label }) => {
            const a = position.get(from.key)!;
            const b = position.get(to.key)!;
            const x1 = a.x + NODE_WIDTH;
            const y1 = a.y + NODE_HEIGHT / 2;
            const x2 = b.x - 2;
            const y2 = b.y + NODE_HEIGHT / 2;
            const middle = (x1 + x2) / 2;
            return (
              <g key={`${from.key}->${to.key}`}>
                <path
                  d={`M ${x1} ${y1} C ${middle} ${y1}, ${middle} ${y2}, ${x2} ${y2}`}
                  class="edge"
                  marker-end="url(#arrow)"
                />
                {label && (
                  <text x={middle} y={(y1 + y2) / 2 - 6} class="edge-label" text-anchor="middle">
                    {truncate(label, 16)}
                  </text>
                )}
              </g>
            );
          })}
          {layers.flat().map((node, index) => {
            const { x, y } = position.get(node.key)!;
            const isTarget = index === layers.flat().length - 1;
            return (
              <g key={node.key} class={isTarget ? "node target" : "node"}>
                <title>{`${node.kind} ${node.name}`}</title>
                <rect x={x} y={y} width={NODE_WIDTH} height={NODE_HEIGHT} rx="6" />
                <text x={x + 10} y={y + 17} class="node-kind">
                  {node.kind}
                </text>
                <text x={x + 10} y={y + 35} class="node-name">
                  {truncate(node.name, 26)}
                </text>
              </g>
            );
          })}
        </svg>
      </ScrollArea>
      <ol class="provenance-steps">
        {layers.map((layer, column) => (
          <li key={layer.map((node) => node.key).join(" ")}>
            {layer.map((node, index) => (
              <span key={node.key}>
                {index > 0 && " or "}
                <strong>{node.kind}</strong> <code>{node.name}</code>
                {node.tasks.length > 0 && column < layers.length - 1 && <> — {node.tasks.join(", ")} →</>}
              </span>
            ))}
          </li>
        ))}
      </ol>
    </div>
  );
}
