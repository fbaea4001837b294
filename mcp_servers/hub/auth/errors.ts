/** Why a remote server's authorization could not be had. */
import { PdaError } from "../../../core/index.js";

export const AUTH_ERROR_CODES = ["AUTH_REQUIRED", "AUTH_FAILED", "AUTH_NOT_FOUND"] as const;
export type AuthErrorCode = (typeof AUTH_ERROR_CODES)[number];

/**
 * AUTH_REQUIRED: the server wants a login and no person is there to give it (exit 3, like an unreachable
 * server: nothing in the command was wrong). AUTH_FAILED: the authorization server refused, or the person's
 * answer was not a valid one (exit 3). AUTH_NOT_FOUND: `pda auth` named a server the config does not have (exit 2).
 */
export class AuthError extends PdaError<AuthErrorCode> {
  readonly server: string;
  constructor(code: AuthErrorCode, server: string, message: string, options?: { cause?: unknown }) {
    super(code, message, { cause: options?.cause, exitCode: code === "AUTH_NOT_FOUND" ? 2 : 3 });
    this.server = server;
  }
}

/** The message for a login no one can give here; names the command that gives it. */
export function loginNeeded(server: string): AuthError {
  return new AuthError(
    "AUTH_REQUIRED",
    server,
    `server "${server}" requires authorization and no one is here to give it: run \`pda auth login ${server}\` ` +
      "in a terminal first (or set PDA_BROWSER to a command that opens the authorization URL)",
  );
}
