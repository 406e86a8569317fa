/**
 * How an entity was reached from a seed, as layers from the seed side: the entities its `task_results`
 * ran on, by depth, then the entity itself. Without task results the `ancestors` form a chain.
 */
import { kindOf, toNumber } from "./format.ts";

export interface Named {
  name: string;
  type: string;
}

export interface TaskResult {
  name?: string;
  task?: string;
  entity_type?: string;
  entity_name?: string;
  depth?: string | number;
}

export interface Node {
  key: string;
  kind: string;
  name: string;
  /** Tasks that ran on this entity on the way. */
  tasks: string[];
}

/** Layers of the path, seed side first; the last layer is the entity itself. */
export function provenanceLayers(
  entity: Named,
  ancestors: Named[] = [],
  taskResults: TaskResult[] = [],
): Node[][] {
  const target: Node = {
    key: `${entity.type}|${entity.name}`,
    kind: kindOf(entity.type),
    name: entity.name,
    tasks: [],
  };
  const layers: Node[][] = [];
  if (taskResults.length > 0) {
    const byDepth = new Map<number, Map<string, Node>>();
    for (const result of taskResults) {
      const depth = toNumber(result.depth ?? 0);
      const key = `${result.entity_type ?? ""}|${result.entity_name ?? ""}`;
      if (key === target.key) continue;
      const layer = byDepth.get(depth) ?? new Map<string, Node>();
      byDepth.set(depth, layer);
      const node = layer.get(key) ?? {
        key,
        kind: kindOf(result.entity_type),
        name: result.entity_name ?? "",
        tasks: [],
      };
      const task = result.task || result.name;
      if (task && !node.tasks.includes(task)) node.tasks.push(task);
      layer.set(key, node);
    }
    const depths = [...byDepth.keys()].sort((a, b) => (Number.isNaN(a) ? 1 : Number.isNaN(b) ? -1 : a - b));
    for (const depth of depths) layers.push([...byDepth.get(depth)!.values()]);
    // Ancestors the task results do not mention still belong on the path: before everything else.
    const seen = new Set(layers.flat().map((node) => node.key));
    const rest = ancestors.filter(
      (a) => !seen.has(`${a.type}|${a.name}`) && `${a.type}|${a.name}` !== target.key,
    );
    if (rest.length > 0)
      layers.unshift(
        rest.map((a) => ({ key: `${a.type}|${a.name}`, kind: kindOf(a.type), name: a.name, tasks: [] })),
      );
  } else {
    for (const ancestor of ancestors) {
      const key = `${ancestor.type}|${ancestor.name}`;
      if (key !== target.key)
        layers.push([{ key, kind: kindOf(ancestor.type), name: ancestor.name, tasks: [] }]);
    }
  }
  layers.push([target]);
  return layers;
}
