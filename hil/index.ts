/**
 * hil/ — the human channel: typed questions and answers, and the channels that answer them
 * (terminal, scripted:<file>, policy:<name>). The loop asks; this folder never touches a session.
 */
export {
  Question,
  QuestionKind,
  QUESTION_KINDS,
  ToolFailureQuestion,
  ClarificationQuestion,
  ApprovalQuestion,
  ElicitationQuestion,
  RequestedSchema,
  Answer,
  AnsweredBy,
  ToolFailureAnswer,
  ClarificationAnswer,
  ApprovalAnswer,
  ApprovalChoice,
  ElicitationAnswer,
  ElicitValue,
  StopAnswer,
  StopOutcome,
  STOP_STATUS,
  checkAnswer,
  parseGivenValue,
  questionText,
  answerText,
  toHumanInput,
  toElicitResult,
  type AnswerOf,
} from "./questions.js";
export { HumanCancelled, ScriptError, isHumanCancelled, type ScriptErrorCode } from "./errors.js";
export { createChannel, askOrDefer, NO_TTY_DEFAULT, type ChannelOptions } from "./channel.js";
export type { HumanChannel, AskOptions } from "./human-channel.js";
export { TerminalChannel, type TerminalOptions } from "./terminal.js";
export { findTerminal, openTerminal, type TerminalKind, type TerminalStreams } from "./tty.js";
export { ScriptedChannel, ScriptFile, type UnconsumedAnswer } from "./scripted.js";
export { PolicyChannel, PolicyName, POLICY_NAMES, POLICY_TABLE, policyAnswer } from "./policy.js";
export {
  elicitationFields,
  elicitationContentSchema,
  fieldSchema,
  fieldError,
  fieldHint,
  type ElicitField,
  type ChoiceOption,
} from "./elicitation.js";
export { renderQuestion, renderCode, renderError, type RenderOptions } from "./render.js";
