// Lint: TypeScript's recommended rules, and the promise rules as errors. A promise nobody awaits
// loses its error; `void` marks a deliberate fire-and-forget. The layers are enforced by
// test/unit/layers.test.ts, formatting by Prettier (`npm run check` runs all three and the types).
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.sandbox/**', 'test-results/**', 'demo/**', 'test/e2e/fixtures/**', '**/*.js', '**/*.mjs'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      // A binding closed over before its single assignment (`let shown; … shown = participant`) stays `let`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // A leading underscore names what is left out on purpose (a field dropped from a copy).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
    },
  },
  {
    // Tests and benchmarks require the CommonJS build script and built files by path.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
