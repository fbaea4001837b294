/** The public door of mcp_servers/: the client hub. The bundled servers are run as processes, not imported. */
export * from "./hub/index.js";
/** DNS-rebinding protection for local HTTP servers (the bundled servers' --http mode, `pda ui`). */
export { HostGuard } from "./common/rebinding.js";
