// Angelia's permission gate for pi, loaded with `pi -e <this file>` by Angelia's pi backend
// only: it is never installed into ~/.pi, so pi run anywhere else is unchanged.
//
// pi itself runs every tool without asking. This extension asks before each tool call that
// can change something (bash, write, edit and any other tool: extension, MCP), and before a
// read-only one (read, grep, find, ls) that looks outside the session's folder. It asks with
// ctx.ui.confirm, which pi-acp turns into an ACP session/request_permission with yes/no
// options; Angelia answers it from the profile's rules, its mode or the user. Anything but a
// yes blocks the call, so the answer is the enforcement, not advice.
//
// The question's message is JSON naming the real tool call (marker, id, tool, input): pi-acp
// sends the question under a tool call id of its own ("pi-ui-<n>"), and Angelia matches the
// answer to the call the transcript shows and checks its rules against the real input.
//
// It also registers the session's MCP servers, which pi-acp would ignore: Angelia writes
// them, in pi's mcp.json shape, to the file named by ANGELIA_PI_MCP_SERVERS. Registered
// servers live only in this pi process; nothing goes into the user's mcp.json.

import { readFileSync } from "node:fs";
import { isAbsolute, relative, resolve } from "node:path";

const MARKER = "angelia-pi-gate/1";
// Tools that only look: asked about only when they look outside the session's folder.
const READ_ONLY = new Set(["read", "grep", "find", "ls"]);

interface ToolCallEvent {
  toolCallId: string;
  toolName: string;
  input: Record<string, unknown>;
}

interface GateContext {
  cwd: string;
  hasUI: boolean;
  ui: { confirm(title: string, message: string): Promise<boolean> };
}

type Verdict = { block: true; reason: string } | undefined;

interface PiApi {
  on(event: "tool_call", handler: (event: ToolCallEvent, ctx: GateContext) => Promise<Verdict>): void;
  registerMcpServer(name: string, config: Record<string, unknown>): void;
}

function inside(cwd: string, path: unknown): boolean {
  // No path means the tool's default, the session's folder.
  if (typeof path !== "string" || path === "") return true;
  const rel = relative(cwd, resolve(cwd, path.replace(/^~(?=$|\/)/, process.env.HOME ?? "~")));
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

function summary(event: ToolCallEvent): string {
  const input = event.input ?? {};
  const what = input.command ?? input.path ?? input.pattern ?? "";
  return what ? `${event.toolName}: ${String(what)}` : event.toolName;
}

export default function angeliaGate(pi: PiApi): void {
  // Registered while the extension loads, so they connect when the session starts.
  const serversFile = process.env.ANGELIA_PI_MCP_SERVERS;
  if (serversFile) {
    const servers = JSON.parse(readFileSync(serversFile, "utf8")) as Record<string, Record<string, unknown>>;
    for (const [name, config] of Object.entries(servers)) pi.registerMcpServer(name, config);
  }
  pi.on("tool_call", async (event, ctx) => {
    if (READ_ONLY.has(event.toolName) && inside(ctx.cwd, event.input?.path)) return undefined;
    if (!ctx.hasUI) {
      // Print or JSON mode: no one to ask, so nothing runs unasked.
      return { block: true, reason: "Angelia's permission gate has no one to ask in this mode." };
    }
    const question = JSON.stringify({
      marker: MARKER,
      toolCallId: event.toolCallId,
      toolName: event.toolName,
      input: event.input ?? {},
    });
    const allowed = await ctx.ui.confirm(summary(event), question);
    if (allowed) return undefined;
    return { block: true, reason: "Not allowed: the user (or a rule of theirs) denied this tool call." };
  });
}
