# frozen_string_literal: true

require "tempfile"

# Open3.capture2e for the tools a test or a story runs while it forks (a fault soak restarts its workers with fork
# all along): the command's output and errors go to a file, read once the command has exited, where Open3 reads a pipe
# until its end. A process forked while the command runs inherits the pipe's write end and keeps it open for its whole
# life, so that end never comes (a soak's failover waited for pg_basebackup's output for as long as its workers
# lived). Returns [output and errors, Process::Status].
module Capture
  def self.capture2e(*command, **options)
    Tempfile.create("capture") do |output|
      pid = Process.spawn(*command, in: File::NULL, out: output, err: output, **options)
      status = Process.wait2(pid).last
      [File.read(output.path), status]
    end
  end

  # capture2e within +seconds+: the command in a process group of its own, which is killed (SIGKILL) once the command
  # exited, or after +seconds+ if it has not, then the command's status is nil. Its processes die with it, a stopped
  # one included, and none keeps anything waiting. Returns [output and errors, Process::Status or nil].
  def self.capture2e_within(seconds, *command, **options)
    Tempfile.create("capture") do |output|
      pid = Process.spawn(*command, in: File::NULL, out: output, err: output, pgroup: true, **options)
      waiter = Process.detach(pid)
      begin
        exited = waiter.join(seconds)
      ensure
        kill_group(pid)
        waiter.join # reaped: it had exited, or SIGKILL ended it
      end
      [File.read(output.path), exited && waiter.value]
    end
  end

  def self.kill_group(pid)
    Process.kill(:KILL, -pid)
  rescue Errno::ESRCH, Errno::EPERM
    nil
  end
end
