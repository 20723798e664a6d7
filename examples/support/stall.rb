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

  # Whether process +pid+ is stopped: the state in /proc/PID/stat, after the command's name in parentheses (which
  # may hold any character).
  def stopped?(pid)
    stat = File.read("/proc/#{pid}/stat")
    stat[stat.rindex(")") + 2] == "T"
  rescue Errno::ENOENT, Errno::ESRCH
    false
  end

  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
end
