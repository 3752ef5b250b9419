// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'node_modules/',
      'runs/',
      'checkpoints/',
      'bench/',
      'native/build/',
      'dist/',
      'src/view/built/',
      'src/tools/built/',
      'test-artifacts/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // All randomness goes through src/random/rng.ts (seeded) so runs are reproducible.
      'no-restricted-properties': [
        'error',
        { object: 'Math', property: 'random', message: 'Use the seeded RNG in src/random/rng.ts.' },
      ],
    },
  },
  {
    // Prettier wraps code at 120 columns; comments and strings are wrapped by hand. Markdown table rows
    // (the reports' templates), regular expressions, URLs and test titles may run longer (prettier keeps
    // an `it('title', () => {` line whole).
    files: ['**/*.ts', '**/*.js', '**/*.mjs'],
    ignores: ['data/**'],
    rules: {
      'max-len': [
        'error',
        {
          code: 120,
          ignoreUrls: true,
          ignoreRegExpLiterals: true,
          ignorePattern: '^\\s*(?:(?:[`\'"]|//|\\*)?\\s*\\||(?:it|test|describe)(?:\\.\\w+)*\\()',
        },
      ],
    },
  },
  {
    files: ['**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
);
