/**
 * The built-in agents (semantics §6): shipped with the service as data, the same for every
 * API key. The ids the hosted API's docs use in their examples (`spell-check`,
 * `grammar-check`) are here, named as there. A key can only switch one on or off (`/v2/agents/update` with `enabled`); its
 * choice lives in the `agent` stream of that key and built-in id (commands/agent.ts).
 */

/** `managedBy` of every built-in agent: the service operator (semantics §6). */
export const BUILT_IN_MANAGED_BY = 'service';

interface UserContextField {
  id: string;
  title: string;
  type: string;
  required: boolean;
}

interface AgentInput {
  inputRequirements: { requires: string[] };
  userContextFields: UserContextField[];
}

export interface BuiltInAgent {
  id: string;
  name: string;
  description: string;
  /**
   * Whether the agent is on for a key that never changed it. Also its `essentialDefault` on a
   * single fetch (the hosted API's "part of the default suite"): here the default suite is
   * the agents on by default.
   */
  enabledByDefault: boolean;
  input?: AgentInput;
}

export const BUILT_IN_AGENTS: readonly BuiltInAgent[] = [
  {
    id: 'spell-check',
    name: 'Spell Check',
    description: 'Finds spelling mistakes and typos in page content using AI analysis',
    enabledByDefault: true,
  },
  {
    id: 'grammar-check',
    name: 'Grammar Check',
    description: 'Flags grammatical errors, agreement mistakes and awkward sentences.',
    enabledByDefault: true,
  },
  {
    id: 'broken-links',
    name: 'Broken links',
    description: 'Checks every link on the page and reports the ones that fail to load or redirect in a loop.',
    enabledByDefault: true,
  },
  {
    id: 'accessibility',
    name: 'Accessibility',
    description: 'Reviews the page against WCAG 2.2: missing alt text, low contrast, heading order, unlabeled controls.',
    enabledByDefault: true,
    input: {
      inputRequirements: { requires: ['pageUrl'] },
      userContextFields: [{ id: 'conformanceLevel', title: 'Conformance level (A, AA, AAA)', type: 'string', required: false }],
    },
  },
  {
    id: 'seo-review',
    name: 'SEO review',
    description: 'Checks titles, meta descriptions, headings and link text for search-engine readiness.',
    enabledByDefault: false,
    input: {
      inputRequirements: { requires: ['pageUrl'] },
      userContextFields: [{ id: 'targetKeywords', title: 'Target keywords', type: 'string', required: false }],
    },
  },
  {
    id: 'style-guide',
    name: 'Style guide',
    description: 'Checks the page against your style guide: tone, terminology and formatting rules.',
    enabledByDefault: false,
    input: {
      inputRequirements: { requires: ['styleGuide'] },
      userContextFields: [{ id: 'styleGuide', title: 'Style guide text or URL', type: 'string', required: true }],
    },
  },
];

const byId = new Map(BUILT_IN_AGENTS.map((a) => [a.id, a]));

export const builtInAgent = (id: string): BuiltInAgent | undefined => byId.get(id);
export const isBuiltInAgent = (id: string): boolean => byId.has(id);
