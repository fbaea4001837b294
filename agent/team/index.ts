/**
 * Agent teams (agents.yaml): agents with their own prompts, narrow tools, budgets and models, calling each other
 * as sub-agents or handing the conversation over; each agent runs the plain loop (../kernel/).
 */
export * from "./config.js";
export * from "./report.js";
export * from "./team.js";
export * from "./handoff.js";
export * from "./narrow-host.js";
export * from "./models.js";
export * from "./phases.js";
export * from "./planner-coder.js";
