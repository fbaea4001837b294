/**
 * action/: runs a CODE step in the QuickJS sandbox against the tool hub and returns an ExecutionResult.
 * See sandbox.ts for the contract, codec.ts for how values cross, args.ts for the calling convention.
 */
export { runCode, MAX_STACK_BYTES, type RunOptions, type Namespaces } from "./sandbox.js";
export { toolSignature, parameterNames } from "./args.js";
export { decode, decodeValue, encode } from "./codec.js";
export { InProcessToolHost, mathTools, type InProcessTool } from "./testing.js";
