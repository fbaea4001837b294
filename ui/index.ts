/** ui/: `pda ui`, the local web app over the session store (sessions, one session's timeline, live runs, batch runs). */
export {
  startUi,
  openBrowser,
  DEFAULT_UI_HOST,
  DEFAULT_UI_PORT,
  type UiOptions,
  type RunningUi,
} from "./server.js";
export { createApp, type AppOptions } from "./app.js";
export { StaticFiles } from "./static.js";
export { Resumer, AnswerRequest, type ResumeState } from "./answer.js";
export { RobotRenders, RenderError, RENDER_SIZE, type RobotPanel, type RenderRef } from "./robot.js";
export { Replayer, ReplayRequest, type ReplayState, type ReplayReport } from "./replay.js";
