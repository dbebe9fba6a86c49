"""create migrate-cron tables

Revision ID: 69973539c494
Revises: 

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mssql, mysql, postgresql

# revision identifiers, used by Alembic.
revision: str = '69973539c494'
down_revision: Union[str, Sequence[str], None] = None
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    # Tables and indexes rendered from migrate_cron/store/schema.py.
    op.create_table('job',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('kind', sa.String(length=200).with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_nopad_bin', length=200), 'mariadb').with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_bin', length=200), 'mysql'), nullable=False),
    sa.Column('ref', sa.String(length=255).with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_nopad_bin', length=255), 'mariadb').with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_bin', length=255), 'mysql'), nullable=True),
    sa.Column('payload', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('state', sa.String(length=16), server_default='open', nullable=False),
    sa.Column('attempts', sa.Integer(), server_default='0', nullable=False),
    sa.Column('max_attempts', sa.Integer(), server_default='5', nullable=False),
    sa.Column('run_at', sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mssql.DATETIME2(precision=6), 'mssql').with_variant(mysql.DATETIME(fsp=6), 'mysql'), nullable=False),
    sa.Column('scheduled_for', sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mssql.DATETIME2(precision=6), 'mssql').with_variant(mysql.DATETIME(fsp=6), 'mysql'), nullable=True),
    sa.Column('locked_by', sa.String(length=255), nullable=True),
    sa.Column('locked_until', sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mssql.DATETIME2(precision=6), 'mssql').with_variant(mysql.DATETIME(fsp=6), 'mysql'), nullable=True),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('output', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mssql.DATETIME2(precision=6), 'mssql').with_variant(mysql.DATETIME(fsp=6), 'mysql'), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mssql.DATETIME2(precision=6), 'mssql').with_variant(mysql.DATETIME(fsp=6), 'mysql'), nullable=True),
    sa.Column('finished_at', sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mssql.DATETIME2(precision=6), 'mssql').with_variant(mysql.DATETIME(fsp=6), 'mysql'), nullable=True),
    sa.CheckConstraint("state IN ('open', 'running', 'done', 'failed', 'cancelled')", name='job_state_check'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('kind', 'ref', name='job_kind_ref_key')
    )
    op.create_index('job_kind_state_idx', 'job', ['kind', 'state', 'finished_at'], unique=False)
    op.create_index('job_state_finished_idx', 'job', ['state', 'finished_at'], unique=False)
    op.create_index('job_state_locked_idx', 'job', ['state', 'locked_until'], unique=False)
    # Claim index: partial where the dialect has them, else (state, run_at, id).
    dialect = op.get_context().dialect.name
    if dialect in ('mysql', 'mariadb', 'mssql'):
        op.create_index('job_claim_idx', 'job', ['state', 'run_at', 'id'], unique=False)
    if dialect in ('postgresql', 'sqlite'):
        op.create_index('job_claim_idx', 'job', ['run_at', 'id'], unique=False, postgresql_where=sa.text("state = 'open'"), sqlite_where=sa.text("state = 'open'"))
    op.create_table('scheduled_runs',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('job_name', sa.String(length=200).with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_nopad_bin', length=200), 'mariadb').with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_bin', length=200), 'mysql'), nullable=False),
    sa.Column('scheduled_for', sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mssql.DATETIME2(precision=6), 'mssql').with_variant(mysql.DATETIME(fsp=6), 'mysql'), nullable=False),
    sa.Column('enqueued_at', sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mssql.DATETIME2(precision=6), 'mssql').with_variant(mysql.DATETIME(fsp=6), 'mysql'), nullable=False),
    sa.Column('job_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('outcome', sa.String(length=16), server_default='enqueued', nullable=False),
    sa.CheckConstraint("outcome IN ('enqueued', 'skipped')", name='scheduled_runs_outcome_check'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('job_name', 'scheduled_for', name='scheduled_runs_slot_key')
    )
    op.create_table('job_leases',
    sa.Column('name', sa.String(length=200).with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_nopad_bin', length=200), 'mariadb').with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_bin', length=200), 'mysql'), nullable=False),
    sa.Column('holder', sa.String(length=255), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mssql.DATETIME2(precision=6), 'mssql').with_variant(mysql.DATETIME(fsp=6), 'mysql'), nullable=False),
    sa.PrimaryKeyConstraint('name')
    )


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_table('job_leases')
    op.drop_table('scheduled_runs')
    op.drop_table('job')
