// fimlsp for VS Code: starts `fimlsp serve` for Python files and shows its inline completions (ghost text).
//
// The language client (10.x, LSP 3.18) asks the server for textDocument/inlineCompletion, which VS Code shows as
// ghost text; the server also answers textDocument/completion (Neovim's popup menu), which this client does not
// ask for. With the "fimlsp" Output channel's log level at Trace, the client logs the protocol's messages there.
// Settings under `fimlsp.*` go to the server as initializationOptions and, when they change, as
// workspace/didChangeConfiguration; a change of the server command restarts the server.
// The server command, model and model server are machine-scoped (package.json): VS Code leaves a workspace's values
// for them out of what `getConfiguration().get()` returns, trusted or not, so a repository cannot choose the program
// that runs or where its code is sent (tests/test_vscode.py tries, in code-server).
// The status bar item shows the model, and after each request what came of it (the server's fimlsp/status), so
// that a user sees why no suggestion appears.
import * as vscode from "vscode";
import {
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
} from "vscode-languageclient/node";
import { SERVER_SETTINGS } from "./settings";

const SECTION = "fimlsp";
const MODEL_STATUS = "fimlsp.modelStatus";
const REQUEST_STATUS = "fimlsp/status";

interface ModelStatus {
  ready: boolean;
  model: string | null;
  error: string | null;
}

// With a null uri it is the model's loading ("loading model …", "… ready in N s"), which watchModel shows.
interface RequestStatus {
  uri: string | null;
  line: number | null;
  character: number | null;
  suggestion: boolean;
  message: string;
}

let client: LanguageClient | undefined;
let status: vscode.StatusBarItem;
let modelName = "";

function serverSettings(): Record<string, unknown> {
  const configuration = vscode.workspace.getConfiguration(SECTION);
  const settings: Record<string, unknown> = {};
  for (const key of SERVER_SETTINGS) {
    const value = configuration.get(key);
    if (value !== undefined && value !== null && value !== "") {
      settings[key] = value;
    }
  }
  return settings;
}

function serverCommand(): string[] {
  const command = vscode.workspace.getConfiguration(SECTION).get<string[]>("server.command");
  return command && command.length > 0 ? command : ["fimlsp", "serve"];
}

function showLoading(): void {
  status.text = "$(loading~spin) fimlsp";
  status.tooltip = "fimlsp: loading the model";
  status.show();
}

function seconds(since: number): string {
  return ((Date.now() - since) / 1000).toFixed(2);
}

// When the server was started and, for the one the activation started, when VS Code activated the extension
// (Date.now()): the start a user waits from.
interface Start {
  server: number;
  activation?: number;
}

function since(start: Start): string {
  const server = `${seconds(start.server)} s after the server was started`;
  if (start.activation === undefined) {
    return server;
  }
  return `${server}, ${seconds(start.activation)} s after the extension's activation`;
}

// `started`: when the server was started, to log how long the model took to be ready after it.
async function watchModel(current: LanguageClient, started?: Start): Promise<void> {
  showLoading();
  try {
    const answer = (await current.sendRequest(ExecuteCommandRequest.type, {
      command: MODEL_STATUS,
      arguments: [],
    })) as ModelStatus;
    if (current !== client) {
      return;
    }
    if (started !== undefined) {
      const outcome = answer.ready ? "ready" : "failed";
      current.outputChannel.appendLine(`fimlsp: model ${outcome} ${since(started)}`);
    }
    if (answer.ready) {
      modelName = answer.model ?? "";
      status.text = "$(sparkle) fimlsp";
      status.tooltip = `fimlsp: ${modelName}`;
    } else {
      status.text = "$(error) fimlsp";
      status.tooltip = `fimlsp: ${answer.error ?? "no model"}`;
    }
  } catch (error) {
    if (current === client) {
      status.text = "$(error) fimlsp";
      status.tooltip = `fimlsp: ${error instanceof Error ? error.message : String(error)}`;
    }
  }
}

async function start(activation?: number): Promise<void> {
  const [command, ...args] = serverCommand();
  // No `transport`: with TransportKind.stdio the client appends `--stdio` to the arguments, which `fimlsp serve`
  // rejects; without one it still talks over the process's stdin and stdout.
  const serverOptions: ServerOptions = { command, args };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: "file", language: "python" },
      { scheme: "untitled", language: "python" },
    ],
    initializationOptions: serverSettings(),
    middleware: {
      // Ghost text only. VS Code would also ask for textDocument/completion as the user types (quick
      // suggestions), run the model for it, and show the suggestion a second time in the suggest list, where Tab
      // may take it instead of the ghost text.
      provideCompletionItem: () => undefined,
    },
  };
  const created = new LanguageClient(SECTION, "fimlsp", serverOptions, clientOptions);
  created.onNotification(REQUEST_STATUS, (params: RequestStatus) => {
    if (created !== client) {
      return;
    }
    if (params.uri === null) {
      status.tooltip = `fimlsp: ${params.message}`;
      return;
    }
    status.text = params.suggestion ? "$(sparkle) fimlsp" : "$(circle-slash) fimlsp: no suggestion";
    status.tooltip = `fimlsp: ${params.message}${modelName ? `\nmodel: ${modelName}` : ""}`;
  });
  client = created;
  showLoading();
  const started: Start = { server: Date.now(), activation };
  try {
    await created.start();
  } catch (error) {
    status.text = "$(error) fimlsp";
    status.tooltip = `fimlsp: cannot start ${command}: ${error instanceof Error ? error.message : String(error)}`;
    return;
  }
  created.outputChannel.appendLine(`fimlsp: initialize answered ${since(started)}`);
  void watchModel(created, started);
}

async function stop(): Promise<void> {
  const current = client;
  client = undefined;
  if (current) {
    await current.stop();
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const activation = Date.now();
  status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
  status.name = "fimlsp";
  context.subscriptions.push(status);
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (!event.affectsConfiguration(SECTION)) {
        return;
      }
      if (event.affectsConfiguration(`${SECTION}.server`)) {
        await stop();
        await start();
        return;
      }
      const current = client;
      if (current && current.isRunning()) {
        await current.sendNotification("workspace/didChangeConfiguration", {
          settings: { [SECTION]: serverSettings() },
        });
        if (event.affectsConfiguration(`${SECTION}.model`) || event.affectsConfiguration(`${SECTION}.device`)) {
          void watchModel(current);
        }
      }
    }),
  );
  await start(activation);
}

export async function deactivate(): Promise<void> {
  await stop();
}
