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
