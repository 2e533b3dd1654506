// Flat config: typescript-eslint's recommended rules, plus the house rules that keep the
// statechart pure (no clock or randomness in machines/, guards/, actions/).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // bench/suite is its own package (bench/package.json): it imports the peer frameworks the root never installs.
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', '.readme-snippets*/**', 'bench/suite/**', 'bench/node_modules/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    files: ['machines/**/*.ts', 'guards/**/*.ts', 'actions/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        { selector: "MemberExpression[object.name='Date'][property.name='now']", message: 'Time enters the machine only through events.' },
        { selector: "NewExpression[callee.name='Date']", message: 'Time enters the machine only through events.' },
        { selector: "MemberExpression[object.name='Math'][property.name='random']", message: 'The machine is deterministic; randomness belongs to the driver.' },
      ],
      'no-restricted-imports': ['error', { patterns: [{ group: ['../src/*', '../src'], message: 'machines/, guards/ and actions/ never import the runtime.' }] }],
    },
  },
);
