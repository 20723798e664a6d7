# frozen_string_literal: true

require "active_support/log_subscriber"

module LeaseMachines
  module Jobs
    # Logs the lease_machines events to ActiveJob's logger: lost, loss, conflict, at_risk and fenced writes refused at
    # warn, thread errors at error, the rest at info (acquire, release) and debug (renew).
    class LogSubscriber < ActiveSupport::LogSubscriber
      def acquire(event) = info { line(event, "acquired, expires at #{event.payload[:expires_at]}") }

      def conflict(event)
        payload = event.payload
        warn do
          line(event, "held by another owner; #{payload[:action]}#{spent(payload[:action], payload[:conflicts],
                                                                          payload[:attempts])}")
        end
      end

      def renew(event) = debug { line(event, "renewed, expires at #{event.payload[:expires_at]}") }

      def at_risk(event) = warn { line(event, "at risk: unconfirmed past the warning deadline") }

      def lost(event)
        warn { line(event, "lost (#{event.payload[:reason] || "unconfirmed"}); the job must stop writing") }
      end

      def loss(event)
        payload = event.payload
        warn do
          line(event, "lost while the job ran (#{payload[:reason] || "unconfirmed"}); #{payload[:action]}" \
                      "#{spent(payload[:action], payload[:losses], payload[:attempts])}")
        end
      end

      def fenced_write(event)
        payload = event.payload
        case payload[:outcome]
        when :refused
          warn do
            line(event, "fenced write refused (#{payload[:reason]}; the newest token issued is #{payload[:highest]})")
          end
        when :written
          done = payload[:committed] ? "committed" : "done, to commit with the enclosing transaction"
          debug { line(event, "fenced write #{done} (#{event.duration.round(1)} ms)") }
        else
          raised = payload[:exception]&.join(": ")
          if payload[:committed]
            warn { line(event, "fenced write committed, then raised (an after_commit callback?): #{raised}") }
          else
            warn { line(event, "fenced write rolled back: #{raised}") }
          end
        end
      end

      def release(event) = info { line(event, "released: #{event.payload[:reason] || event.payload[:status]}") }

      def thread_error(event)
        error = event.payload[:error]
        error { line(event, "#{error.class}: #{error.message}") }
      end

      def logger = ::ActiveJob::Base.logger

      private

      # The retries a conflict or a loss spent, where the action is to retry or retries were spent before it: nothing
      # for a discard, a resume or a raise without retries.
      def spent(action, spent, attempts)
        return "" unless action == :retry || (action == :raise && spent.to_i.positive?)

        " (#{spent} of #{attempts} retries spent)"
      end

      def line(event, what)
        payload = event.payload
        job = payload[:job]
        "[lease_machines] #{job&.class&.name}#{" (#{job.job_id})" if job.respond_to?(:job_id)} " \
          "#{payload[:resource]}#{" slot #{payload[:slot]}" if payload[:slot]} " \
          "token #{payload[:token].inspect}: #{what}"
      end
    end
  end
end

LeaseMachines::Jobs::LogSubscriber.attach_to :lease_machines
