/** The loop kernel: the Perception–Decision–Action loop, its moves, budgets, spending and session log. */
export * from "./loop.js";
export * from "./deps.js";
export * from "./events.js";
export * from "./session.js";
export * from "./budgets.js";
export * from "./spend.js";
export * from "./scoped-host.js";
export * from "./recall.js";
export * from "./human.js";
export * from "./hooks.js";
