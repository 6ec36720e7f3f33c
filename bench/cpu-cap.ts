/**
 * `--pg-cpu=<cores>` (the replicas scenario): each PostgreSQL server's processes in a cgroup of
 * their own, capped at that many cores. On one machine the servers otherwise share every core
 * with the services and the load generator, so moving reads to a standby moves CPU without
 * adding any; capped, each server is a fixed capacity, as a server of its own would be, and
 * whether reads spread over standbys add capacity shows in requests per second.
 *
 * cgroup v2 (`cpu.max`) where the unified hierarchy has the cpu controller, else v1's cpu
 * controller (`cpu.cfs_quota_us`). The postmaster and every process under it are moved; the
 * backends it forks later start in its cgroup. Needs write access to the hierarchy (root).
 */
import fs from 'node:fs';
import path from 'node:path';
import { postgresPids } from './stage-budget.js';

const PERIOD_US = 100_000;

/** Where a new cgroup with a CPU cap can be made, and how to set its cap. */
function hierarchy(): { root: string; cap: (dir: string, cores: number) => void } {
  const unified = fs.existsSync('/sys/fs/cgroup/cgroup.controllers') ? '/sys/fs/cgroup' : '/sys/fs/cgroup/unified';
  const controllers = (() => {
    try {
      return fs.readFileSync(path.join(unified, 'cgroup.controllers'), 'utf8');
    } catch {
      return '';
    }
  })();
  if (controllers.split(/\s+/).includes('cpu')) {
    return { root: unified, cap: (dir, cores) => fs.writeFileSync(path.join(dir, 'cpu.max'), `${Math.round(cores * PERIOD_US)} ${PERIOD_US}`) };
  }
  if (fs.existsSync('/sys/fs/cgroup/cpu/cpu.cfs_quota_us')) {
    return {
      root: '/sys/fs/cgroup/cpu',
      cap: (dir, cores) => {
        fs.writeFileSync(path.join(dir, 'cpu.cfs_period_us'), String(PERIOD_US));
        fs.writeFileSync(path.join(dir, 'cpu.cfs_quota_us'), String(Math.round(cores * PERIOD_US)));
      },
    };
  }
  throw new Error('--pg-cpu: no cgroup cpu controller found (cgroup v2 cpu.max or v1 cpu.cfs_quota_us)');
}

/** Caps the server of `dataDir` at `cores`; `release` moves what is left back and removes the cgroup. */
export function capPostgres(name: string, dataDir: string, cores: number): { release(): void } {
  const h = hierarchy();
  const dir = path.join(h.root, `collab-bench-${name}-${process.pid}`);
  fs.mkdirSync(dir);
  h.cap(dir, cores);
  // One pid per write: v1 takes no more.
  for (const pid of postgresPids(dataDir)) {
    try {
      fs.writeFileSync(path.join(dir, 'cgroup.procs'), String(pid));
    } catch {
      // Ended meanwhile.
    }
  }
  return {
    release() {
      try {
        for (const pid of fs.readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean)) {
          fs.writeFileSync(path.join(h.root, 'cgroup.procs'), pid);
        }
        fs.rmdirSync(dir);
      } catch {
        // Best effort: a cgroup left behind is empty once its server has stopped.
      }
    },
  };
}
