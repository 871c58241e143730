/**
 * Where messages send users to read more. An installed package has no src/, and its docs/ sits in
 * node_modules where a relative "docs/rules.md" names nothing, so messages carry full URLs.
 */
export const DOCS_BASE_URL = 'https://github.com/toolstorm/toolstorm/blob/main/docs/'

/** The URL of one page of the docs, e.g. `docsUrl('rules.md')`. */
export function docsUrl(page: string): string {
  return DOCS_BASE_URL + page
}
