/**
 * The hub's edge toward terminals and prompts: every text a server supplied (log data, progress and
 * elicitation messages, stdout garbage, errors that quote stderr or the server's own error text) is stripped
 * of control sequences here, once, with core's stripControls, before a listener or caller sees it.
 */
import { ToolError, stripControls, stripControlsDeep } from "../../core/index.js";
import type { HubEvent } from "./events.js";

export function cleanEvent(e: HubEvent): HubEvent {
  switch (e.type) {
    case "server_state":
      return e.error === undefined ? e : { ...e, error: stripControls(e.error) };
    case "progress":
      return e.message === undefined ? e : { ...e, message: stripControls(e.message) };
    case "log":
      return {
        ...e,
        ...(e.logger !== undefined && { logger: stripControls(e.logger) }),
        data: stripControlsDeep(e.data),
      };
    case "garbage":
      return { ...e, line: stripControls(e.line) };
    case "elicitation":
      return {
        ...e,
        message: stripControls(e.message),
        ...(e.reason !== undefined && { reason: stripControls(e.reason) }),
      };
    case "sampling":
      return e.reason === undefined ? e : { ...e, reason: stripControls(e.reason) };
    case "tools_changed":
    case "tool_warning":
      return e; // built by the hub (names.ts strips the tool name)
  }
}

/** The error with its message stripped of control sequences (the same object, as callers may hold it). */
export function cleanError(e: ToolError): ToolError {
  e.message = stripControls(e.message);
  return e;
}
