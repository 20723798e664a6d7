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
end
