import assert from 'node:assert/strict';
import { OpenQuestions, type OpenQuestion } from '../../../src/app/workspace/open-questions';

/**
 * The agent's questions waiting for the user: subscribers hear each as it is asked (the chat shows it
 * with its buttons), and the first answer settles it, from the dialog, a button, or Stop.
 */

const edit = (id: string): OpenQuestion => ({ id, kind: 'edit', question: 'Apply this edit to src/a.ts?', subject: 'src/a.ts' });

/** A dialog the test answers, or leaves open. */
function dialog() {
  let answer: (allow: boolean) => void = () => undefined;
  const shown = new Promise<boolean>((resolve) => {
    answer = resolve;
  });
  return { show: () => shown, answer: (allow: boolean) => answer(allow) };
}

describe('the open questions', () => {
  it('tell a subscriber of each question as it is asked, before the dialog is answered', async () => {
    const questions = new OpenQuestions<OpenQuestion>();
    const heard: OpenQuestion[] = [];
    questions.onDidAsk((q) => heard.push(q));
    const d = dialog();
    const answered = questions.ask(edit('edit-1'), new AbortController().signal, d.show);
    assert.deepEqual(heard, [edit('edit-1')]);
    assert.deepEqual(questions.pending(), [edit('edit-1')]);
    d.answer(true);
    assert.equal(await answered, true);
    assert.deepEqual(questions.pending(), []);
  });

  it("settle with the first answer: a chat button's, then the dialog's is ignored", async () => {
    const questions = new OpenQuestions<OpenQuestion>();
    const d = dialog();
    const answered = questions.ask(edit('edit-1'), new AbortController().signal, d.show);
    assert.equal(questions.answer('edit-1', false), true);
    d.answer(true);
    assert.equal(await answered, false);
    assert.equal(questions.answer('edit-1', true), false, 'an answered question is no longer open');
  });

  it('take only `true` from a button as an approval', async () => {
    const questions = new OpenQuestions<OpenQuestion>();
    const answered = questions.ask(edit('edit-1'), new AbortController().signal, dialog().show);
    questions.answer('edit-1', 'yes');
    assert.equal(await answered, false);
    assert.equal(questions.answer(42, true), false);
  });

  it('are refused by Stop, and one asked after Stop is refused before anyone is told', async () => {
    const questions = new OpenQuestions<OpenQuestion>();
    const heard: string[] = [];
    questions.onDidAsk((q) => heard.push(q.id));
    const stop = new AbortController();
    const answered = questions.ask(edit('edit-1'), stop.signal, dialog().show);
    stop.abort();
    assert.equal(await answered, false);
    assert.equal(await questions.ask(edit('edit-2'), stop.signal, dialog().show), false);
    assert.deepEqual(heard, ['edit-1']);
    assert.deepEqual(questions.pending(), []);
  });

  it('are refused when the dialog fails, and all at once when the window closes', async () => {
    const questions = new OpenQuestions<OpenQuestion>();
    assert.equal(await questions.ask(edit('edit-1'), new AbortController().signal, () => Promise.reject(new Error('no window'))), false);
    const waiting = [edit('edit-2'), edit('edit-3')].map((q) => questions.ask(q, new AbortController().signal, dialog().show));
    questions.refuseAll();
    assert.deepEqual(await Promise.all(waiting), [false, false]);
  });

  it('stop telling a subscriber once its subscription is disposed', async () => {
    const questions = new OpenQuestions<OpenQuestion>();
    const heard: string[] = [];
    const subscription = questions.onDidAsk((q) => heard.push(q.id));
    void questions.ask(edit('edit-1'), new AbortController().signal, dialog().show);
    subscription.dispose();
    void questions.ask(edit('edit-2'), new AbortController().signal, dialog().show);
    assert.deepEqual(heard, ['edit-1']);
    questions.refuseAll();
  });
});
