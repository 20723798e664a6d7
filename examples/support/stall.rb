# frozen_string_literal: true

# A stop-the-world pause, as the stories and the suite stage one: a job stops its own process (SIGSTOP), and the
# process that watches it finds it stopped and resumes it (SIGCONT) once its lease ran out and a successor took over.
module Stall
  module_function

  # The job stops its own process, while it computes its line (50 ms, holding the GVL): the whole process, its
  # threads included; SIGSTOP takes effect within microseconds of kill returning. Returns when it was resumed (on the
  # monotonic clock); the job writes at once, as a job that never noticed the pause would (and says so after).
  # Another thread of the process wakes too, but waits for the GVL, which CRuby hands over after 100 ms at the
  # soonest.
  def stop_the_world
    Process.kill(:STOP, Process.pid)
    computed = now + 0.05
    nil while now < computed
    now
  end

  # Whether process +pid+ is stopped (SIGSTOP): its state, T.
  def stopped?(pid) = state(pid) == "T"

  # Resumes process +pid+ (SIGCONT), stopped or not, gone or not: what each path that may have seen it stop does in
  # an ensure, so that no worker stays stopped, holding its output pipe open, whatever happened meanwhile.
  def resume(pid)
    Process.kill(:CONT, pid)
  rescue Errno::ESRCH
    nil
  end

  # Process +pid+'s state letter (nil once it is gone): in /proc/PID/stat where there is /proc (Linux), after the
  # command's name in parentheses (which may hold any character); else ps's (macOS, the BSDs).
  def state(pid)
    return ps_state(pid) unless File.exist?("/proc/self/stat")

    stat = File.read("/proc/#{pid}/stat")
    stat[stat.rindex(")") + 2]
  rescue Errno::ENOENT, Errno::ESRCH
    nil
  end

  def ps_state(pid)
    state = IO.popen(["ps", "-o", "state=", "-p", pid.to_s], err: File::NULL, &:read).strip
    state[0] unless state.empty?
  end

  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
end
