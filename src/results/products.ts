/**
 * The products result: each product (with its version when known) and on how many applications and
 * services it was seen. `count` is an integer written as a string, as the spec shows it.
 */
import { Type } from "typebox";
import { carriesProducts, productsOf, type ResultEntity } from "../core/facts.ts";

export const ProductItem = Type.Object({
  product: Type.String({
    description: 'Product name with its version when known, e.g. "Apache HTTP Server 2.4.49".',
  }),
  count: Type.String({ description: "How many applications and services run it: an integer, as a string." }),
});

export function buildProducts(entities: Iterable<ResultEntity>): Array<{ product: string; count: string }> {
  const counts = new Map<string, number>();
  for (const entity of entities) {
    if (!carriesProducts(entity)) continue;
    const seen = new Set(productsOf(entity).map(([name, version]) => `${name} ${version}`.trim()));
    for (const product of seen) counts.set(product, (counts.get(product) ?? 0) + 1);
  }
  return [...counts]
    .sort(([a, x], [b, y]) => y - x || a.localeCompare(b))
    .map(([product, count]) => ({ product, count: String(count) }));
}
