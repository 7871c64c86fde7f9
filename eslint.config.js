import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'data/**', 'node_modules/**', 'coverage/**', '**/migrations/meta/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'off',
      eqeqeq: ['error', 'smart'],
    },
  },
  {
    // Head office's data access is asynchronous (docs/decisions.md, "Head office's data access made asynchronous"): a
    // promise nobody awaits is a write that may not have happened, or an error nobody sees. These rules need the type
    // checker, so they run on head office's and the command's own code, not on the tests (tsconfig.typed-lint.json: a
    // program of just that code; eslint takes ~36 s instead of ~17 s on the 2-core machine).
    files: ['server/**/*.ts', 'cli/**/*.ts'],
    ignores: ['**/*.test.ts', 'server/console/web/**'],
    languageOptions: { parserOptions: { project: './tsconfig.typed-lint.json', tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
  {
    // Tests read JSON replies of many shapes; typing each one adds nothing.
    files: ['**/*.test.ts', 'test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      // Its in-page polling evaluates a string, which the console's CSP (script-src 'self') refuses whenever the first
      // check is not already true: a flake under load. test/support/browser.ts's until() polls over the protocol.
      'no-restricted-properties': ['error', { property: 'waitForFunction', message: "Use until() from test/support/browser.ts: the console's CSP refuses waitForFunction's in-page eval." }],
    },
  },
);
