import * as vscode from 'vscode';
import { COMMAND } from '../app/contributions';
import { noConversationPresentation, type GaugePresentation } from '../app/report/gauge-text';

/**
 * The gauge's status-bar item: made when the extension activates, so that the gauge is there from
 * the start (saying "no conversation" until the rest of the extension has loaded and read one),
 * then given to `ContextGauge`, which keeps it up to date. Clicking it compacts.
 */
export class GaugeItem implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('longrun.gauge', vscode.StatusBarAlignment.Right, 100);

  constructor() {
    this.item.name = 'Longrun Context';
    this.item.command = COMMAND.compact;
    this.show(noConversationPresentation());
    this.item.show();
  }

  show(p: GaugePresentation): void {
    this.item.text = p.text;
    this.item.accessibilityInformation = { label: p.accessibilityLabel, role: 'button' };
    const tooltip = new vscode.MarkdownString(p.tooltipMarkdown);
    tooltip.supportThemeIcons = true;
    this.item.tooltip = tooltip;
    this.item.backgroundColor =
      p.background === 'error'
        ? new vscode.ThemeColor('statusBarItem.errorBackground')
        : p.background === 'warning'
          ? new vscode.ThemeColor('statusBarItem.warningBackground')
          : undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}
