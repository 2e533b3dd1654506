/**
 * The conversation a task starts with: the instructions, a prior conversation (first task only) and the
 * task's prompt, framed with the goal and the earlier tasks' outputs when the run is a workflow.
 */
import type { ResolvedConfig, TaskConfig } from '../config/config.js';
import { workflowTaskPrompt } from '../prompts.js';
import { Transcript } from '../runtime/transcript.js';
import type { TaskFeedback } from '../learning/learning-math.js';
import type { PriorConversation } from './prior-conversation.js';

/** What a task's opening conversation is made from. */
export interface TaskTranscriptSource {
  config: ResolvedConfig;
  tasks: readonly TaskConfig[];
  goal: string;
  conversation: PriorConversation;
  taskOutputs: Readonly<Record<string, unknown>>;
  /** Characters of the tool specs every request carries, for the token estimate. */
  toolSpecChars: number;
  /** With learning: what a task's earlier runs went through, for its prompt function. */
  feedback?: ((taskId: string) => TaskFeedback) | null;
}

export function taskTranscript(source: TaskTranscriptSource, index: number): Transcript {
  const { config, conversation } = source;
  const transcript = new Transcript(source.toolSpecChars);
  if (config.instructions) transcript.append({ role: 'system', content: config.instructions });
  if (index === 0) for (const message of conversation.messages) transcript.append(message);
  // Continuing a conversation without a new goal: its last user message is the task.
  if (index > 0 || conversation.goalGiven || config.tasks !== null)
    transcript.append({ role: 'user', content: taskPrompt(source, index) });
  transcript.taskMessage = transcript.messages.findLast((message) => message.role === 'user') ?? null;
  return transcript;
}

function taskPrompt({ config, tasks, goal, taskOutputs, feedback }: TaskTranscriptSource, index: number): string {
  const task = tasks[index];
  if (!task) throw new Error(`no task at index ${index}`);
  const prompt =
    typeof task.prompt === 'function'
      ? task.prompt(
          feedback ? { goal, outputs: taskOutputs, feedback: feedback(task.id) } : { goal, outputs: taskOutputs },
        )
      : task.prompt;
  return config.tasks === null ? prompt : workflowTaskPrompt(goal, taskOutputs, task.id, prompt);
}
