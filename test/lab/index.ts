export { startLab } from "./lab.ts";
export type * from "./types.ts";
export { defaultWorld } from "./world.ts";
