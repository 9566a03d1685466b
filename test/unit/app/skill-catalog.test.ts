import assert from 'node:assert/strict';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { MAX_LISTED_SKILLS, MAX_LISTING_CHARS, SkillCatalog, type SkillCatalogDeps } from '../../../src/app/skill-catalog';
import { SkillLoader, type SkillConversation } from '../../../src/app/skill-loader';
import { skillsSection } from '../../../src/app/skill-listing';
import { loadedSkillIn, type LoadedSkill } from '../../../src/core/loaded-skills';
import { TOOL_NAMES } from '../../../src/core/tool-names';
import { ToolFailure } from '../../../src/llm/workspace-port';

const never = new AbortController().signal;

/** Writes a skill folder `<skills>/<name>` with its SKILL.md and any other files. */
async function writeSkill(skills: string, name: string, description = `Does ${name}.`, files: Record<string, string> = {}): Promise<string> {
  const folder = path.join(skills, name);
  await fs.mkdir(folder, { recursive: true });
  await fs.writeFile(path.join(folder, 'SKILL.md'), `---\nname: ${name}\ndescription: ${description}\n---\n# ${name}\n\nThe steps of ${name}.\n`);
  for (const [file, text] of Object.entries(files)) {
    await fs.mkdir(path.dirname(path.join(folder, file)), { recursive: true });
    await fs.writeFile(path.join(folder, file), text);
  }
  return folder;
}

describe('skills: discovery, listing and loading', () => {
  let base: string;
  let project: string;
  let outside: string;
  let home: string;
  let warnings: string[];
  let trusted: boolean;
  let userFolders: string[];

  const catalog = (deps: Partial<SkillCatalogDeps> = {}) =>
    new SkillCatalog({
      roots: () => [{ name: 'project', fsPath: project }],
      trusted: () => trusted,
      userFolders: () => userFolders,
      log: { warn: (message) => void warnings.push(message) },
      home,
      ...deps,
    });

  const names = async (c = catalog()) => {
    await c.refresh(never);
    return c.skills().map((s) => `${s.name} ${s.folder}`);
  };

  beforeEach(async () => {
    base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'longrun-skills-')));
    project = path.join(base, 'project');
    outside = path.join(base, 'outside');
    home = path.join(base, 'home');
    await fs.mkdir(project);
    await fs.mkdir(outside);
    await fs.mkdir(home);
    warnings = [];
    trusted = true;
    userFolders = [];
  });

  afterEach(async () => {
    await fs.rm(base, { recursive: true, force: true });
  });

  it('lists the skills of .github/skills, .agents/skills and .claude/skills by name, the first folder winning a name', async () => {
    await writeSkill(path.join(project, '.claude/skills'), 'review', 'Review from .claude.');
    await writeSkill(path.join(project, '.github/skills'), 'review', 'Review from .github.');
    await writeSkill(path.join(project, '.agents/skills'), 'deploy');
    await writeSkill(path.join(project, '.github/skills'), 'alpha');
    await fs.writeFile(path.join(project, '.github/skills', 'README.md'), 'not a skill');
    await fs.mkdir(path.join(project, '.github/skills', 'empty'));
    const c = catalog();
    assert.deepEqual(await names(c), ['alpha .github/skills/alpha', 'deploy .agents/skills/deploy', 'review .github/skills/review']);
    assert.equal(c.find('review')?.description, 'Review from .github.');
    assert.deepEqual(warnings, [
      'The skill "review" in .claude/skills/review is not offered: .github/skills/review has a skill of that name, which comes first.',
    ]);
  });

  it('skips a skill that cannot be used and reports it once, however often the folders are read', async () => {
    const skills = path.join(project, '.github/skills');
    await writeSkill(skills, 'good');
    await fs.mkdir(path.join(skills, 'broken'));
    await fs.writeFile(path.join(skills, 'broken', 'SKILL.md'), '---\nname: broken\n---\nno description\n');
    const c = catalog();
    assert.deepEqual(await names(c), ['good .github/skills/good']);
    await c.refresh(never);
    await c.refresh(never);
    assert.deepEqual(warnings, [
      'The skill in .github/skills/broken is not offered: its front matter has no "description", which says when to use it.',
    ]);
  });

  it('reads the user’s folders too, after the workspace’s, and only the user’s in an untrusted workspace', async () => {
    await writeSkill(path.join(project, '.github/skills'), 'shared', 'The workspace’s.');
    await writeSkill(path.join(home, '.agents/skills'), 'shared', 'The user’s.');
    await writeSkill(path.join(home, '.agents/skills'), 'mine');
    userFolders = ['~/.agents/skills', 'relative/skills'];
    const c = catalog();
    assert.deepEqual(await names(c), ['mine ~/.agents/skills/mine', 'shared .github/skills/shared']);
    assert.ok(warnings.some((w) => /"relative\/skills" of longrun.skills.userFolders is not an absolute path/.test(w)));
    trusted = false;
    assert.deepEqual(await names(c), ['mine ~/.agents/skills/mine', 'shared ~/.agents/skills/shared']);
  });

  it('refuses skills that a symbolic link leads out of the workspace, and keeps one that stays inside', async () => {
    const skills = path.join(project, '.github/skills');
    await fs.mkdir(skills, { recursive: true });
    await fs.symlink(await writeSkill(outside, 'escape'), path.join(skills, 'escape'));
    await fs.mkdir(path.join(skills, 'linked-file'));
    await fs.writeFile(path.join(outside, 'SKILL.md'), '---\nname: linked-file\ndescription: Outside.\n---\n');
    await fs.symlink(path.join(outside, 'SKILL.md'), path.join(skills, 'linked-file', 'SKILL.md'));
    await fs.symlink(await writeSkill(path.join(project, 'shared'), 'inside'), path.join(skills, 'inside'));
    // The same folder reached twice is one skill, not a name taken twice.
    await fs.mkdir(path.join(project, '.claude'));
    await fs.symlink(skills, path.join(project, '.claude', 'skills'));
    assert.deepEqual(await names(), ['inside .github/skills/inside']);
    assert.equal(warnings.length, 2, warnings.join('\n'));
    assert.ok(warnings.every((w) => /is not offered: .*symbolic link that points outside/.test(w)));
  });

  it('refuses a skills folder that is itself a link out of the workspace', async () => {
    await writeSkill(path.join(outside, 'skills'), 'escape');
    await fs.mkdir(path.join(project, '.agents'));
    await fs.symlink(path.join(outside, 'skills'), path.join(project, '.agents', 'skills'));
    assert.deepEqual(await names(), []);
    assert.match(warnings[0] ?? '', /The skills folder .agents\/skills is not read: .*symbolic link/);
  });

  it('lists at most 100 skills, naming the others in the log', async () => {
    const skills = path.join(project, '.github/skills');
    for (let i = 0; i < MAX_LISTED_SKILLS + 3; i++) await writeSkill(skills, `s${String(i).padStart(3, '0')}`);
    const c = catalog();
    await c.refresh(never);
    assert.equal(c.skills().length, MAX_LISTED_SKILLS);
    assert.equal(c.skills().at(-1)?.name, 's099');
    assert.match(warnings[0] ?? '', /not offered: s100, s101, s102\./);
  });

  it('renders the listing the same way every time, bounded in length, and nothing when there are no skills', () => {
    assert.equal(skillsSection([]), '');
    const skills = Array.from({ length: 40 }, (_, i) => ({ name: `s${i}`, description: 'd'.repeat(1_000), folder: `.github/skills/s${i}` }));
    const section = skillsSection(skills);
    assert.equal(section, skillsSection([...skills]));
    assert.ok(section.length <= MAX_LISTING_CHARS + 100, `${section.length} characters`);
    assert.match(section, /\(\d+ more skills are not listed here for length\.\)\n<\/skills>$/);
    assert.match(section, new RegExp(`load the skill with the ${TOOL_NAMES.skill} tool`));
  });

  describe('loading', () => {
    const conversation = (loaded: LoadedSkill[] = [], budget = 10_000): SkillConversation => ({
      loadedSkills: () => loaded,
      skillBudgetTokens: () => budget,
      countText: (text) => Math.ceil(text.length / 4),
    });

    async function loader(state = conversation()) {
      const c = catalog();
      await c.refresh(never);
      return new SkillLoader(c, state);
    }

    async function refused(load: Promise<string>, pattern: RegExp): Promise<void> {
      await assert.rejects(load, (error: unknown) => error instanceof ToolFailure && pattern.test(error.message));
    }

    it('gives a skill’s instructions with its folder’s files, once per conversation', async () => {
      await writeSkill(path.join(project, '.github/skills'), 'pdf-forms', 'Fill forms.', {
        'references/FORMS.md': 'form fields',
        'scripts/fill.py': 'print()',
      });
      const loaded: LoadedSkill[] = [];
      const l = await loader(conversation(loaded));
      const text = await l.load({ name: 'pdf-forms' }, never);
      assert.match(text, /^<skill-instructions name="pdf-forms" folder=".github\/skills\/pdf-forms">\n# pdf-forms\n\nThe steps of pdf-forms\./);
      assert.match(text, /file\): references\/FORMS\.md, scripts\/fill\.py\n<\/skill-instructions>$/);
      assert.doesNotMatch(text, /name: pdf-forms/, 'the front matter is not sent');
      assert.deepEqual(loadedSkillIn({ type: 'tool-result', toolCallId: 'c', toolName: TOOL_NAMES.skill, output: text }), {
        name: 'pdf-forms',
        text,
      });
      // Asked again in the same turn (a step's results reach the view only after it), or later on the branch.
      const again = await l.load({ name: 'pdf-forms' }, never);
      assert.match(again, /already loaded/);
      assert.doesNotMatch(again, /steps of/);
      loaded.push({ name: 'pdf-forms', text });
      assert.match(await (await loader(conversation(loaded))).load({ name: 'pdf-forms' }, never), /already loaded/);
    });

    it('refuses a skill it does not offer, naming those it does', async () => {
      await writeSkill(path.join(project, '.github/skills'), 'pdf-forms');
      await refused((await loader()).load({ name: 'nope' }, never), /no skill named "nope"\. The skills: pdf-forms\./);
    });

    it('refuses a skill that would pass the room loaded skills may take', async () => {
      await writeSkill(path.join(project, '.github/skills'), 'big', 'Big.', {});
      await fs.appendFile(path.join(project, '.github/skills/big/SKILL.md'), 'x'.repeat(4_000));
      await refused(
        (await loader(conversation([], 500))).load({ name: 'big' }, never),
        /was not loaded: its instructions take about [\d,]+ tokens, .* may take 500 together/,
      );
    });

    it('loads a file of the skill’s folder, and nothing outside it', async () => {
      const skills = path.join(project, '.github/skills');
      const folder = await writeSkill(skills, 'pdf-forms', 'Fill forms.', { 'references/FORMS.md': 'form fields' });
      await fs.writeFile(path.join(project, 'secret.txt'), 'workspace secret');
      await fs.writeFile(path.join(outside, 'secret.txt'), 'outside secret');
      await fs.symlink(path.join(outside, 'secret.txt'), path.join(folder, 'out.md'));
      await fs.symlink(path.join(project, 'secret.txt'), path.join(folder, 'up.md'));
      const l = await loader();
      assert.equal(
        await l.load({ name: 'pdf-forms', file: 'references/FORMS.md' }, never),
        '<skill-file name="pdf-forms" file="references/FORMS.md">\nform fields\n</skill-file>',
      );
      await refused(l.load({ name: 'pdf-forms', file: '../../../secret.txt' }, never), /not a file inside the skill's folder/);
      await refused(l.load({ name: 'pdf-forms', file: path.join(outside, 'secret.txt') }, never), /not a file inside the skill's folder/);
      await refused(l.load({ name: 'pdf-forms', file: 'out.md' }, never), /leads out of the skill's folder .* through a symbolic link/);
      await refused(l.load({ name: 'pdf-forms', file: 'up.md' }, never), /leads out of the skill's folder/);
      await refused(l.load({ name: 'pdf-forms', file: 'missing.md' }, never), /has no file "missing.md"/);
    });
  });
});
