import assert from 'node:assert/strict';
import fc from 'fast-check';
import { isSkillName, MAX_DESCRIPTION_CHARS, parseSkillFile } from '../../../src/app/skill-file';

const file = (frontMatter: string, body = '# Steps\n\n1. Do it.\n') => `---\n${frontMatter}\n---\n${body}`;

function skillOf(text: string, folder = 'pdf-forms') {
  const parsed = parseSkillFile(text, folder);
  assert.ok(parsed.ok, `a skill: ${parsed.ok ? '' : parsed.problem}`);
  return parsed;
}

function problemOf(text: string, folder = 'pdf-forms'): string {
  const parsed = parseSkillFile(text, folder);
  assert.ok(!parsed.ok, 'not a skill');
  return parsed.problem;
}

describe('a SKILL.md in the Agent Skills format', () => {
  it('gives its name, its description and its body after the front matter', () => {
    const { skill, warnings } = skillOf(file('name: pdf-forms\ndescription: Fill PDF forms. Use when the user has a PDF form.'));
    assert.deepEqual(skill, {
      name: 'pdf-forms',
      description: 'Fill PDF forms. Use when the user has a PDF form.',
      body: '# Steps\n\n1. Do it.',
      hidden: false,
    });
    assert.deepEqual(warnings, []);
  });

  it('accepts the optional fields, and reads nothing from allowed-tools', () => {
    const { skill, warnings } = skillOf(
      file(
        [
          'name: pdf-forms',
          'description: Fill PDF forms.',
          'license: Apache-2.0',
          'compatibility: Requires Python 3.14+ and uv',
          'metadata:',
          '  author: example-org',
          '  version: "1.0"',
          'allowed-tools: Bash(git:*) Bash(rm:*) Read',
        ].join('\n'),
      ),
    );
    assert.deepEqual(warnings, []);
    assert.deepEqual(Object.keys(skill).sort(), ['body', 'description', 'hidden', 'name'], 'no permission of any kind comes out of a skill');
  });

  it('reads CRLF line ends, a byte-order mark, a folded description and "..." closing the front matter', () => {
    const text = '\uFEFF---\r\nname: pdf-forms\r\ndescription: >-\r\n  Fill PDF\r\n  forms.\r\n...\r\nBody\r\n';
    const { skill } = skillOf(text);
    assert.equal(skill.description, 'Fill PDF forms.');
    assert.equal(skill.body, 'Body');
  });

  it('reads a plain value with a colon in it, as skills written for other agents have', () => {
    const { skill } = skillOf(file('name: pdf-forms\ndescription: Use this skill when: the user asks about PDFs'));
    assert.equal(skill.description, 'Use this skill when: the user asks about PDFs');
    const commented = skillOf(file('name: pdf-forms\ndescription: Forms: fill them # not a comment'));
    assert.equal(commented.skill.description, 'Forms: fill them # not a comment');
  });

  it('refuses a file without front matter, or with front matter that is not closed, not YAML, empty or not fields', () => {
    assert.match(problemOf('# Just a document\n'), /does not begin with front matter/);
    assert.match(problemOf('---\nname: pdf-forms\ndescription: x\n'), /not closed/);
    assert.match(problemOf(file('name: [pdf-forms\ndescription: "x')), /not valid YAML/);
    assert.match(problemOf(file('')), /empty/);
    assert.match(problemOf(file('- name\n- description')), /not a list of fields/);
  });

  it('refuses a YAML alias, which front matter never needs and a YAML bomb is made of', () => {
    assert.match(problemOf(file('name: pdf-forms\nbase: &a Fill\ndescription: *a')), /not valid YAML/);
  });

  it('refuses a skill without a name or a description', () => {
    assert.match(problemOf(file('description: Fill PDF forms.')), /no "name"/);
    assert.match(problemOf(file('name: pdf-forms')), /no "description"/);
    assert.match(problemOf(file('name: pdf-forms\ndescription: "   "')), /no "description"/);
    assert.match(problemOf(file('name: pdf-forms\ndescription: [a, b]')), /no "description"/);
  });

  it('refuses a name the format does not allow', () => {
    for (const name of ['PDF-Forms', '-pdf', 'pdf-', 'pdf--forms', 'pdf_forms', 'a'.repeat(65)]) {
      assert.match(problemOf(file(`name: ${JSON.stringify(name)}\ndescription: x`), name), /not one the format allows/, name);
    }
    assert.match(problemOf(file('name:\n  first: a\ndescription: x')), /not one the format allows/);
    assert.ok(skillOf(file(`name: ${'a'.repeat(64)}\ndescription: x`), 'a'.repeat(64)));
    // Digits are text: YAML would read these as numbers, and the name is the name as written.
    assert.equal(skillOf(file('name: 007\ndescription: x'), '007').skill.name, '007');
    assert.equal(skillOf(file('name: 2024\ndescription: true'), '2024').skill.description, 'true');
  });

  it('keeps a skill whose name is not its folder’s, and one whose description is too long, saying so', () => {
    assert.match(skillOf(file('name: pdf-forms\ndescription: x'), 'forms').warnings[0] ?? '', /not its folder's \("forms"\)/);
    const long = 'word '.repeat(400).trim();
    const parsed = skillOf(file(`name: pdf-forms\ndescription: ${long}`));
    assert.equal(parsed.skill.description.length, MAX_DESCRIPTION_CHARS);
    assert.match(parsed.warnings[0] ?? '', /more than the 1024 allowed/);
  });

  it('hides a skill that opts out of being loaded by the model', () => {
    assert.equal(skillOf(file('name: pdf-forms\ndescription: x\ndisable-model-invocation: true')).skill.hidden, true);
    assert.equal(skillOf(file('name: pdf-forms\ndescription: x\ndisable-model-invocation: false')).skill.hidden, false);
    assert.equal(skillOf(file('name: pdf-forms\ndescription: x')).skill.hidden, false);
  });

  it('reads back any allowed name and any description as written, quoted or not', () => {
    const segment = fc.stringMatching(/^[a-z0-9]{1,8}$/);
    const name = fc
      .array(segment, { minLength: 1, maxLength: 6 })
      .map((parts) => parts.join('-'))
      .filter((n) => n.length <= 64);
    const description = fc
      .string({ minLength: 1, maxLength: 300 })
      .filter((d) => d.trim() !== '' && !/[\u0000-\u001f\u007f-\u009f\u2028\u2029\uFEFF]/.test(d));
    fc.assert(
      fc.property(name, description, (n, d) => {
        const parsed = parseSkillFile(file(`name: ${n}\ndescription: ${JSON.stringify(d)}`), n);
        assert.ok(parsed.ok, parsed.ok ? '' : parsed.problem);
        assert.equal(parsed.skill.name, n);
        assert.equal(parsed.skill.description, d.trim().replace(/\s+/g, ' '));
        assert.ok(isSkillName(n));
      }),
    );
  });
});
