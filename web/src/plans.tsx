import { useCallback, useState } from 'react';
import { api, type LiveConnection, type PlanDetail, type Plan } from './api.js';
import { useLiveLoad } from './shared.js';

const PLAN_EVENTS = ['plan.create', 'step.start', 'step.end', 'critic.decide', 'plan.complete', 'run.end'];

/** A thread's plans as a live tree: milestones, steps, tool calls, critic verdicts, revisions, why it ended, and the overlord's last decision. */
export function PlansSection({ threadId, live }: { threadId: string; live: LiveConnection }) {
  const [plans, setPlans] = useState<PlanDetail[]>([]);

  const load = useCallback(async () => {
    const list = (await api<{ plans: Plan[] }>('GET', `/api/threads/${threadId}/plans?limit=5`).catch(() => ({ plans: [] as Plan[] }))).plans;
    setPlans(await Promise.all(list.map((plan) => api<PlanDetail>('GET', `/api/plans/${plan.id}`))));
  }, [threadId]);

  useLiveLoad(live, load, { threadId, types: PLAN_EVENTS });

  if (plans.length === 0) return null;
  return (
    <section aria-labelledby="plans-heading">
      <h3 id="plans-heading">Plans</h3>
      {plans.map((plan) => (
        <details key={plan.id} open={plan === plans[0]} className="plan">
          <summary>
            <strong>{plan.goal ?? plan.request}</strong> · {plan.status}
            {plan.strategicRevisionCount > 0 ? ` · ${plan.strategicRevisionCount} strategic revisions` : ''}
          </summary>
          {plan.reason && <p className="muted">Ended: {plan.reason}</p>}
          {plan.heartbeat && (
            <p className="muted">
              Overlord: {plan.heartbeat.lastDecision ?? 'no decision yet'}
              {plan.heartbeat.lastReason ? ` (${plan.heartbeat.lastReason})` : ''}
              {plan.heartbeat.nextCheckAt ? `, next check ${new Date(plan.heartbeat.nextCheckAt).toLocaleString()}` : ''}
            </p>
          )}
          <ol className="milestones">
            {plan.milestones.map((milestone) => (
              <li key={milestone.id} className={`milestone ${milestone.status}`}>
                <span>
                  {milestone.title} · {milestone.status}
                  {milestone.revisionCount > 0 ? ` · revised ${milestone.revisionCount}×` : ''}
                </span>
                {milestone.criticDecision && (
                  <span className="muted">
                    critic: {milestone.criticDecision}
                    {milestone.criticReason ? ` — ${milestone.criticReason}` : ''}
                  </span>
                )}
                <ol className="steps">
                  {milestone.steps.map((step, index) => (
                    <li key={index}>
                      {step.description} · {step.status}
                      {step.result && <div className="muted">{step.result}</div>}
                      {plan.toolCalls
                        .filter((call) => call.milestoneId === milestone.id && call.stepIndex === index)
                        .map((call) => (
                          <div key={call.id} className="tool-call">
                            tool {call.tool} · {call.status}
                            {call.error ? `: ${call.error}` : ''}
                          </div>
                        ))}
                    </li>
                  ))}
                </ol>
              </li>
            ))}
          </ol>
        </details>
      ))}
    </section>
  );
}
