import type * as vscode from 'vscode';

/**
 * API keys of the configured endpoints, kept only in VS Code's SecretStorage: never in settings,
 * logs, history or summaries.
 */
export class ApiKeys {
  constructor(private readonly secrets: vscode.SecretStorage) {}

  private key(endpoint: string): string {
    return `longrun.endpoint.${endpoint}.apiKey`;
  }

  get(endpoint: string): Thenable<string | undefined> {
    return this.secrets.get(this.key(endpoint));
  }

  set(endpoint: string, value: string): Thenable<void> {
    return this.secrets.store(this.key(endpoint), value);
  }

  delete(endpoint: string): Thenable<void> {
    return this.secrets.delete(this.key(endpoint));
  }

  onDidChange(listener: () => void): vscode.Disposable {
    return this.secrets.onDidChange((e) => {
      if (e.key.startsWith('longrun.endpoint.')) listener();
    });
  }
}
