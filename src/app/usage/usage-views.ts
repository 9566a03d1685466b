import type { ConversationLog } from '../../core/history';
import type { ReportedUsage } from '../../core/log';
import type { CostBreakdown } from '../../core/usage-cost';
import type { UsageReport } from '../../core/usage-report';
import type { Conversation } from '../conversation/conversation';
import { branchCacheState, conversationUsage } from './conversation-cache';
import { CATALOGUE_SNAPSHOT, type ModelCatalogue } from '../models/model-catalogue';
import type { LongrunSettings } from '../settings';
import type { UsageView } from './usage-text';

/**
 * The usage and cost a conversation shows (gauge, `/context`, export), made again only when records
 * were added or the prices changed: each call's cost is worked out once, since records never change.
 */
export class UsageViews {
  private readonly reports = new WeakMap<Conversation, { all: ConversationLog; length: number; prices: unknown; report: UsageReport }>();
  private readonly costs = new WeakMap<ReportedUsage, { prices: unknown; cost: CostBreakdown | undefined }>();

  constructor(
    private readonly deps: {
      readonly catalogue: ModelCatalogue;
      readonly settings: () => Pick<LongrunSettings, 'cache' | 'modelOverrides'>;
      readonly now: () => number;
    },
  ) {}

  /** What `conversation` used and cost, and the state of its cache; `editorModel`: the model in use is one of VS Code's. */
  of(conversation: Conversation, editorModel: boolean): UsageView {
    const settings = this.deps.settings();
    const now = this.deps.now();
    const report = this.report(conversation, settings.modelOverrides);
    const unreported = report.conversation.requests === 0 && hasAnswer(conversation.log());
    return {
      report,
      ...(editorModel ? { editorModel: true } : {}),
      ...(unreported ? { unreported: true } : {}),
      catalogueDate: CATALOGUE_SNAPSHOT.date,
      cache: { state: branchCacheState(conversation.log(), settings.cache, now), nextRequestTokens: conversation.count().tokens, now },
    };
  }

  /** The report of every record of `conversation`; `prices` is what the costs were worked out with. */
  report(conversation: Conversation, prices: unknown = this.deps.settings().modelOverrides): UsageReport {
    const all = conversation.allRecords();
    const known = this.reports.get(conversation);
    if (known && known.all === all && known.length === all.length && known.prices === prices) return known.report;
    const report = conversationUsage(all, (usage) => this.cost(usage, prices));
    this.reports.set(conversation, { all, length: all.length, prices, report });
    return report;
  }

  private cost(usage: ReportedUsage, prices: unknown): CostBreakdown | undefined {
    const known = this.costs.get(usage);
    if (known && known.prices === prices) return known.cost;
    const cost = this.deps.catalogue.cost(usage);
    this.costs.set(usage, { prices, cost });
    return cost;
  }
}

/** Whether the branch holds an answer of the model (looked for from the end, where the latest is). */
function hasAnswer(records: ConversationLog): boolean {
  for (let i = records.length - 1; i >= 0; i--) {
    const record = records[i]!;
    if (record.type === 'message' && record.message.role === 'assistant') return true;
  }
  return false;
}
