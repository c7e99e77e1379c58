/**
 * A failure to start that the operator causes and fixes (a bad `--config`, a damaged file in the
 * data directory): its message names the file and the cause, and the CLI prints it as one line
 * with exit status 1. A stack trace is for defects, which this is not.
 *
 * @module
 */
export class StartupError extends Error {
  override readonly name = 'StartupError';
}
