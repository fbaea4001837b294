/** The shape every channel has: its own file so the channels and the factory (channel.ts) import no cycle. */
import type { AnswerOf, Question } from "./questions.js";

export interface AskOptions {
  /** Aborting it cancels a pending prompt: ask() rejects with HumanCancelled (reason "aborted"). */
  signal?: AbortSignal;
}

/**
 * Somewhere a question gets answered. ask() resolves with an answer of the question's kind or a StopAnswer
 * (abort / fail / defer), and rejects with HumanCancelled (Ctrl-C or the signal) or, for a scripted channel,
 * ScriptError. The answer is validated before it is returned.
 */
export interface HumanChannel {
  /** "terminal", "scripted" or "policy:<name>". */
  readonly name: string;
  ask<Q extends Question>(q: Q, opts?: AskOptions): Promise<AnswerOf<Q["kind"]>>;
}
