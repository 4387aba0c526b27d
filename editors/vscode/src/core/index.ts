/** Everything that runs without VS Code; the node tests import this module's bundle. */
export * from "./client";
export * from "./discovery";
export * from "./drafts";
export * from "./errors";
export * from "./masking";
export * from "./picks";
export * from "./render";
export * from "./review";
export * from "./sessionTree";
export * from "./settings";
export * from "./sources";
export * from "./status";
export * from "./nodes";
export * from "./treeModel";
export { ErrorCodes, HookNames, Methods } from "../protocol";
